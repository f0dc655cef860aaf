package runner

import (
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

func init() {
	newOnWorld = func(w *sim.World, cfg ensemble.Config, atEnd func()) worldEnsemble {
		e := ensemble.NewOnWorld(w, cfg)
		// Registered after the ensemble's own end hook (Shutdown), so the
		// connections have been reset and further dials fail fast when the
		// clients close.
		w.OnRunEnd(atEnd)
		return e
	}
}
