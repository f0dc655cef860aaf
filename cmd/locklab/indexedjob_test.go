package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// indexedJob is the part of deploy/explore-indexed-job.yaml that decides
// what each pod runs.
type indexedJob struct {
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The Indexed Job's own logic, run locally (issue 40): the manifest's shell
// command runs once per completion index of a small sweep, as separate
// processes started together like the pods, with JOB_COMPLETION_INDEX set as
// the Job controller sets it and the results volume mapped to a directory;
// 'locklab merge' of their outputs is then byte for byte the unsharded
// sweep's summary, except where the counterexample file was written.
func TestIndexedJobCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	data, err := os.ReadFile("../../deploy/explore-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job indexedJob
	if err := yaml.Unmarshal(data, &job); err != nil {
		t.Fatalf("deploy/explore-indexed-job.yaml: %v", err)
	}
	containers := job.Spec.Template.Spec.Containers
	if job.Spec.CompletionMode != "Indexed" || len(containers) != 1 {
		t.Fatalf("completionMode %q with %d containers; want Indexed with one", job.Spec.CompletionMode, len(containers))
	}
	c := containers[0]
	if c.Image != "locklab:local" {
		t.Errorf("image %q; want locklab:local, the tag scripts/build-image.sh gives", c.Image)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	// The shard count is written twice (Kubernetes cannot pass completions
	// to the command): a mismatch would skip or repeat runs.
	if env["SHARDS"] != strconv.Itoa(job.Spec.Completions) {
		t.Fatalf("env SHARDS %q but completions %d: the shards would not cover the sweep", env["SHARDS"], job.Spec.Completions)
	}
	if len(c.Command) == 0 || len(c.VolumeMounts) != 1 || env["SEED"] == "" {
		t.Fatalf("command %q, volume mounts %v, SEED %q: not the manifest this test knows", c.Command, c.VolumeMounts, env["SEED"])
	}

	// The small sweep: 60 runs in 3 shards finds violations in every shard
	// at seed 1.
	const runs, shards = "60", 3
	bin := locklabBinary(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	mount := c.VolumeMounts[0].MountPath
	args := make([]string, 0, len(c.Command)+len(c.Args))
	args = append(args, c.Command[1:]...)
	for _, a := range c.Args {
		args = append(args, strings.ReplaceAll(a, mount+"/", results+"/"))
	}
	pods := make([]*exec.Cmd, shards)
	stderr := make([]bytes.Buffer, shards)
	for k := range pods {
		pod := exec.Command(c.Command[0], args...)
		pod.Dir = dir
		pod.Env = []string{
			"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
			"SEED=" + env["SEED"], "RUNS=" + runs, "SHARDS=" + strconv.Itoa(shards),
			"JOB_COMPLETION_INDEX=" + strconv.Itoa(k),
		}
		pod.Stderr = &stderr[k]
		if err := pod.Start(); err != nil {
			t.Fatal(err)
		}
		pods[k] = pod
	}
	var files []string
	for k, pod := range pods {
		err := pod.Wait()
		var ee *exec.ExitError
		if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
			t.Fatalf("completion index %d: %v (want exit 0 or 1, a violation)\n%s", k, err, stderr[k].String())
		}
		files = append(files, filepath.Join(results, "shard-"+strconv.Itoa(k+1)+".json"))
	}
	merge := exec.Command(bin, append([]string{"merge"}, files...)...)
	merged, err := merge.Output()
	if merge.ProcessState.ExitCode() != 1 {
		t.Fatalf("merge: exit %d (%v); want 1, the sweep's violations\n%s", merge.ProcessState.ExitCode(), err, merged)
	}

	whole := exec.Command(bin, "explore", "redlock", "--seed", env["SEED"], "--runs", runs, "--all", "--json", "--out", filepath.Join(dir, "all.yaml"))
	want, err := whole.Output()
	if whole.ProcessState.ExitCode() != 1 {
		t.Fatalf("the unsharded sweep: exit %d (%v); want 1\n%s", whole.ProcessState.ExitCode(), err, want)
	}
	var out exploreOutput
	if err := json.Unmarshal(merged, &out); err != nil || out.Counterexample == nil || len(out.Violations) < shards {
		t.Fatalf("merged output (%v) has %d violations and counterexample %v; the test needs one in every shard\n%s", err, len(out.Violations), out.Counterexample, merged)
	}
	cx := out.Counterexample.File
	if !strings.HasPrefix(cx, results+"/cx-shard-") {
		t.Fatalf("merged counterexample file %q; want the lowest violating shard's under %s", cx, results)
	}
	got := bytes.ReplaceAll(merged, []byte(cx), []byte(filepath.Join(dir, "all.yaml")))
	if !bytes.Equal(got, want) {
		t.Fatalf("merge of the Job's shards differs from the unsharded sweep\nmerged:\n%s\nunsharded:\n%s", got, want)
	}
}
