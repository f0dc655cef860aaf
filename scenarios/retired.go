package scenarios

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/locklab/locklab/algorithms"
)

// Retired spellings of scenario keys (issue 33). One word, fencing, named
// two things: params.fencing, where a lease's fencing tokens come from
// (incr, table, file), and resource.fencing, the store's rule for checking
// them (none, ">", ">="). They are params.token_source and
// resource.token_check now (docs/scenario-format.md). A file in the old
// words keeps working: each old key is read as its new name, with a
// warning at its place that names the new spelling; a file that gives a
// key in both spellings is refused, naming both.

// retiredParamFencing is params.token_source's former name.
const retiredParamFencing = "fencing"

// renameRetired reads the retired spellings as their new names, recording
// a warning for each in s.renamed and the spelling the file used in
// s.spelled (for the places of later messages and for an old
// counterexample's digest). It changes nothing the second time.
func (s *Scenario) renameRetired() Errors {
	var errs Errors
	if v, ok := s.Params[retiredParamFencing]; ok {
		delete(s.Params, retiredParamFencing) // refused or renamed here, not again as unread
		if _, both := s.Params[algorithms.ParamTokenSource]; both {
			errs = append(errs, s.fieldErr("params.fencing", "is the retired spelling of params.token_source, which this file also sets; keep token_source (where the fencing tokens come from) and remove fencing"))
		} else {
			s.Params[algorithms.ParamTokenSource] = v
			s.spell("params."+algorithms.ParamTokenSource, "params.fencing")
			s.renamed = append(s.renamed, s.fieldErr("params.fencing", "renamed; read as token_source: %q (params.token_source is where the fencing tokens come from, resource.token_check how the store checks them)", Printable(v, 40)))
		}
	}
	if v := s.Resource.RetiredFencing; v != "" {
		s.Resource.RetiredFencing = ""
		if s.Resource.TokenCheck != "" {
			errs = append(errs, s.fieldErr("resource.fencing", "is the retired spelling of resource.token_check, which this file also sets; keep token_check (how the store checks fencing tokens) and remove fencing"))
		} else {
			s.Resource.TokenCheck = v
			s.spell("resource.token_check", "resource.fencing")
			s.renamed = append(s.renamed, s.fieldErr("resource.fencing", "renamed; read as token_check: %q (resource.token_check is how the store checks fencing tokens, params.token_source where they come from)", Printable(v, 40)))
		}
	}
	return errs
}

func (s *Scenario) spell(field, written string) {
	if s.spelled == nil {
		s.spelled = map[string]string{}
	}
	s.spelled[field] = written
}

// written is field as the file spelled it: its retired name when the file
// used that one, so a later message about it points at the file's key.
func (s *Scenario) written(field string) string {
	if w, ok := s.spelled[field]; ok {
		return w
	}
	return field
}

// retiredDigest is the digest a locklab that wrote the retired spellings
// computed for s (Marshal without the counterexample block, params.fencing
// and resource.fencing in place of their new names), so a counterexample
// file it sealed still replays; false when the file used no retired
// spelling.
func (s *Scenario) retiredDigest() (string, bool) {
	if len(s.spelled) == 0 {
		return "", false
	}
	c := s.Clone()
	c.Counterexample = nil
	if _, ok := s.spelled["params."+algorithms.ParamTokenSource]; ok {
		c.Params[retiredParamFencing] = c.Params[algorithms.ParamTokenSource]
		delete(c.Params, algorithms.ParamTokenSource)
	}
	if _, ok := s.spelled["resource.token_check"]; ok {
		c.Resource.RetiredFencing, c.Resource.TokenCheck = c.Resource.TokenCheck, ""
	}
	b, err := c.Marshal()
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}
