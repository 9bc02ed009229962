// SPDX-License-Identifier: Apache-2.0

// Command go-webhook is the baseline of `make bench`: the minimal mutating admission
// webhook a Go user would write with the standard library only (net/http,
// crypto/tls, encoding/json). It decodes the AdmissionReview (admission.k8s.io/v1 or
// v1beta1), looks the pod's Job up in a map loaded at start from a JSON file (a Job or
// a JSON array of Jobs; no API calls), and answers with the RFC 6902 patch of Volcano's
// env, svc and pytorch plugins (docs/plugins.md §4.1, §4.2, §4.4), upserting like the C webhook
// (decision D5): an identical entry is left alone, a different one replaced.
//
//	go-webhook --jobs JOBS.json --tls-cert-file tls.crt --tls-private-key-file tls.key \
//	    [--bind-address 127.0.0.1] [--port 0] [--port-file FILE]
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

const jobAPIVersion = "batch.volcano.sh/v1alpha1"

// Job is the part of a Volcano Job the three plugins read.
type Job struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		Plugins map[string][]string `json:"plugins"`
		Tasks   []Task              `json:"tasks"`
	} `json:"spec"`
}

// Task is one spec.tasks entry.
type Task struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	Template struct {
		Spec struct {
			Hostname  string `json:"hostname"`
			Subdomain string `json:"subdomain"`
		} `json:"spec"`
	} `json:"template"`
}

// EnvVar is a container env entry, as read and as written.
type EnvVar struct {
	Name      string          `json:"name"`
	Value     string          `json:"value,omitempty"`
	ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
}

type port struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int    `json:"containerPort"`
}

type mount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

type container struct {
	Name         string   `json:"name"`
	Env          []EnvVar `json:"env"`
	Ports        []port   `json:"ports"`
	VolumeMounts []mount  `json:"volumeMounts"`
}

type volume struct {
	Name      string          `json:"name"`
	ConfigMap json.RawMessage `json:"configMap,omitempty"`
}

// Pod is the part of a pod the plugins read.
type Pod struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			UID        string `json:"uid"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		InitContainers []container `json:"initContainers"`
		Containers     []container `json:"containers"`
		Volumes        []volume    `json:"volumes"`
		Hostname       string      `json:"hostname"`
		Subdomain      string      `json:"subdomain"`
	} `json:"spec"`
}

type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID       string `json:"uid"`
		Operation string `json:"operation"`
		Namespace string `json:"namespace"`
		Resource  struct {
			Group    string `json:"group"`
			Resource string `json:"resource"`
		} `json:"resource"`
		SubResource string          `json:"subResource"`
		Object      json.RawMessage `json:"object"`
	} `json:"request"`
}

type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	UID       string   `json:"uid"`
	Allowed   bool     `json:"allowed"`
	PatchType string   `json:"patchType,omitempty"`
	Patch     string   `json:"patch,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Status    *status  `json:"status,omitempty"`
}

type reviewOut struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Response   *response `json:"response"`
}

type op struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value"`
}

var jobs = map[string]*Job{}

func loadJobs(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var list []*Job
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		err = json.Unmarshal(raw, &list)
	} else {
		var j Job
		err = json.Unmarshal(raw, &j)
		list = []*Job{&j}
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	for _, j := range list {
		ns := j.Metadata.Namespace
		if ns == "" {
			ns = "default"
		}
		jobs[ns+"/"+j.Metadata.Name] = j
	}
	return nil
}

// upName is UP(T): '-' to '_', upper case.
func upName(t string) string { return strings.ToUpper(strings.ReplaceAll(t, "-", "_")) }

// domain of replica i of task t (docs/plugins.md §3.6).
func domain(j *Job, t *Task, i int) string {
	host := t.Template.Spec.Hostname
	if host == "" {
		host = j.Metadata.Name + "-" + t.Name + "-" + strconv.Itoa(i)
	}
	sub := t.Template.Spec.Subdomain
	if sub == "" {
		sub = j.Metadata.Name
	}
	return host + "." + sub
}

func findTask(j *Job, name string) *Task {
	for k := range j.Spec.Tasks {
		if j.Spec.Tasks[k].Name == name {
			return &j.Spec.Tasks[k]
		}
	}
	return nil
}

// flagValue reads -name=v / --name=v / --name v from Go-flag-style arguments.
func flagValue(args []string, name, def string) string {
	for k := 0; k < len(args); k++ {
		a := strings.TrimLeft(args[k], "-")
		if a == name && k+1 < len(args) {
			return args[k+1]
		}
		if strings.HasPrefix(a, name+"=") {
			return a[len(name)+1:]
		}
	}
	return def
}

func literal(name, value string) EnvVar { return EnvVar{Name: name, Value: value} }

func cmRef(cm, key string) EnvVar {
	ref, _ := json.Marshal(map[string]map[string]string{
		"configMapKeyRef": {"name": cm, "key": key}})
	return EnvVar{Name: key, ValueFrom: ref}
}

// patcher accumulates ops against the original pod, upserting (D5).
type patcher struct{ ops []op }

func sameEnv(a, b EnvVar) bool {
	return a.Value == b.Value && bytes.Equal(a.ValueFrom, b.ValueFrom)
}

func (p *patcher) env(base string, c *container, add []EnvVar) {
	var fresh []EnvVar
	for _, e := range add {
		found := false
		for k := range c.Env {
			if c.Env[k].Name == e.Name {
				found = true
				if !sameEnv(c.Env[k], e) {
					c.Env[k] = e
					p.ops = append(p.ops, op{"replace", base + "/env/" + strconv.Itoa(k), e})
				}
				break
			}
		}
		if !found {
			fresh = append(fresh, e)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if c.Env == nil {
		p.ops = append(p.ops, op{"add", base + "/env", fresh})
	} else {
		for _, e := range fresh {
			p.ops = append(p.ops, op{"add", base + "/env/-", e})
		}
	}
	c.Env = append(c.Env, fresh...)
}

func (p *patcher) mount(base string, c *container, m mount) {
	for k := range c.VolumeMounts {
		if c.VolumeMounts[k].MountPath == m.MountPath {
			if c.VolumeMounts[k] != m {
				p.ops = append(p.ops, op{"replace", base + "/volumeMounts/" + strconv.Itoa(k), m})
			}
			return
		}
	}
	if c.VolumeMounts == nil {
		p.ops = append(p.ops, op{"add", base + "/volumeMounts", []mount{m}})
	} else {
		p.ops = append(p.ops, op{"add", base + "/volumeMounts/-", m})
	}
	c.VolumeMounts = append(c.VolumeMounts, m)
}

func (p *patcher) port(base string, c *container, pt port) {
	for _, q := range c.Ports {
		if q.ContainerPort == pt.ContainerPort {
			return
		}
	}
	if c.Ports == nil {
		p.ops = append(p.ops, op{"add", base + "/ports", []port{pt}})
	} else {
		p.ops = append(p.ops, op{"add", base + "/ports/-", pt})
	}
	c.Ports = append(c.Ports, pt)
}

// mutate runs env, svc, pytorch (the fixed order of D2) on pod for job.
func mutate(j *Job, pod *Pod) ([]op, error) {
	p := &patcher{}
	name := pod.Metadata.Name
	index := ""
	if parts := strings.Split(name, "-"); len(parts) >= 3 {
		index = parts[len(parts)-1]
	}
	task := pod.Metadata.Annotations["volcano.sh/task-spec"]
	if task == "" {
		task = "default"
	}
	plugins := j.Spec.Plugins
	_, hasEnv := plugins["env"]
	_, hasSvc := plugins["svc"]
	ptArgs, hasPt := plugins["pytorch"]
	hasSvc = hasSvc || hasPt // D1: svc is implied by pytorch
	type target struct {
		base string
		c    *container
	}
	var all, main []target
	for k := range pod.Spec.Containers {
		t := target{"/spec/containers/" + strconv.Itoa(k), &pod.Spec.Containers[k]}
		all = append(all, t)
		main = append(main, t)
	}
	for k := range pod.Spec.InitContainers {
		all = append(all, target{"/spec/initContainers/" + strconv.Itoa(k), &pod.Spec.InitContainers[k]})
	}
	jname := j.Metadata.Name
	if hasEnv {
		add := []EnvVar{literal("VK_TASK_INDEX", index), literal("VC_TASK_INDEX", index)}
		for _, t := range all {
			p.env(t.base, t.c, add)
		}
	}
	if hasSvc {
		cm := jname + "-svc"
		if pod.Spec.Hostname == "" && name != "" {
			p.ops = append(p.ops, op{"add", "/spec/hostname", name})
			pod.Spec.Hostname = name
		}
		if pod.Spec.Subdomain == "" {
			p.ops = append(p.ops, op{"add", "/spec/subdomain", jname})
			pod.Spec.Subdomain = jname
		}
		if flagValue(plugins["svc"], "inject-hosts-env", "true") != "false" {
			var add []EnvVar
			for _, t := range j.Spec.Tasks {
				up := "VC_" + upName(t.Name)
				add = append(add, cmRef(cm, up+"_HOSTS"), cmRef(cm, up+"_NUM"))
			}
			for _, t := range all {
				p.env(t.base, t.c, add)
			}
		}
		cmRaw, _ := json.Marshal(map[string]string{"name": cm})
		vol := volume{Name: cm, ConfigMap: cmRaw}
		found := false
		for k := range pod.Spec.Volumes {
			if pod.Spec.Volumes[k].Name == cm {
				found = true
				if !bytes.Equal(pod.Spec.Volumes[k].ConfigMap, cmRaw) {
					p.ops = append(p.ops, op{"replace", "/spec/volumes/" + strconv.Itoa(k), vol})
				}
			}
		}
		if !found {
			if pod.Spec.Volumes == nil {
				p.ops = append(p.ops, op{"add", "/spec/volumes", []volume{vol}})
			} else {
				p.ops = append(p.ops, op{"add", "/spec/volumes/-", vol})
			}
		}
		for _, t := range all {
			p.mount(t.base, t.c, mount{Name: cm, MountPath: "/etc/volcano"})
		}
	}
	if hasPt {
		master := flagValue(ptArgs, "master", "master")
		worker := flagValue(ptArgs, "worker", "worker")
		portNum, err := strconv.Atoi(flagValue(ptArgs, "port", "23456"))
		if err != nil {
			portNum = 23456
		}
		if mt := findTask(j, master); mt != nil {
			addr := domain(j, mt, 0)
			world := mt.Replicas
			if wt := findTask(j, worker); wt != nil {
				world += wt.Replicas
			}
			add := []EnvVar{literal("MASTER_ADDR", addr), literal("MASTER_PORT", strconv.Itoa(portNum)),
				literal("WORLD_SIZE", strconv.Itoa(world))}
			switch task {
			case worker:
				i, err := strconv.Atoi(index)
				if err != nil {
					return nil, fmt.Errorf("pytorch: pod %s: index %q is not a number", name, index)
				}
				add = append(add, literal("RANK", strconv.Itoa(i+1)))
			case master:
				add = append(add, literal("RANK", "0"))
			}
			for _, t := range main {
				p.port(t.base, t.c, port{Name: "pytorchjob-port", ContainerPort: portNum})
				p.env(t.base, t.c, add)
			}
		}
	}
	return p.ops, nil
}

func decide(rv *review) *response {
	req := rv.Request
	resp := &response{UID: req.UID, Allowed: true}
	if req.Operation != "CREATE" || req.Resource.Resource != "pods" || req.Resource.Group != "" ||
		req.SubResource != "" {
		return resp
	}
	var pod Pod
	if err := json.Unmarshal(req.Object, &pod); err != nil {
		resp.Allowed = false
		resp.Status = &status{Code: 400, Message: "pod: " + err.Error()}
		return resp
	}
	var jobName, jobUID string
	for _, o := range pod.Metadata.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.APIVersion == jobAPIVersion && o.Kind == "Job" {
			jobName, jobUID = o.Name, o.UID
		}
	}
	if jobName == "" {
		return resp
	}
	j := jobs[req.Namespace+"/"+jobName]
	if j == nil || (jobUID != "" && j.Metadata.UID != jobUID) {
		resp.Warnings = []string{"job " + req.Namespace + "/" + jobName + " not found"}
		return resp
	}
	ops, err := mutate(j, &pod)
	if err != nil {
		resp.Allowed = false
		resp.Status = &status{Code: 400, Message: err.Error()}
		return resp
	}
	if len(ops) > 0 {
		raw, err := json.Marshal(ops)
		if err != nil {
			resp.Allowed = false
			resp.Status = &status{Code: 500, Message: err.Error()}
			return resp
		}
		resp.PatchType = "JSONPatch"
		resp.Patch = base64.StdEncoding.EncodeToString(raw)
	}
	return resp
}

func badRequest(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]interface{}{"kind": "Status", "apiVersion": "v1",
		"metadata": map[string]string{}, "status": "Failure", "message": msg,
		"reason": http.StatusText(code), "code": code})
}

func mutateHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		badRequest(w, http.StatusMethodNotAllowed, "only POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		badRequest(w, http.StatusBadRequest, err.Error())
		return
	}
	var rv review
	if err := json.Unmarshal(body, &rv); err != nil || rv.Request == nil {
		badRequest(w, http.StatusBadRequest, "not an AdmissionReview")
		return
	}
	out := reviewOut{APIVersion: rv.APIVersion, Kind: rv.Kind, Response: decide(&rv)}
	raw, err := json.Marshal(out)
	if err != nil {
		badRequest(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(raw)
}

// benchLoop answers n reviews of the file (one JSON review a line, in rotation) as
// mutateHandler does, without HTTP: unmarshal, decide, marshal. For callgrind: bench.py
// runs it twice, with n and with more, and takes the difference per review, so the
// process's start, the Jobs' loading and the file's reading cancel out.
func benchLoop(path string, n int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var bodies [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			bodies = append(bodies, line)
		}
	}
	if len(bodies) == 0 {
		return fmt.Errorf("%s: no reviews", path)
	}
	patched := 0
	for k := 0; k < n; k++ {
		var rv review
		if err := json.Unmarshal(bodies[k%len(bodies)], &rv); err != nil || rv.Request == nil {
			return fmt.Errorf("review %d: not an AdmissionReview", k%len(bodies))
		}
		raw, err := json.Marshal(reviewOut{APIVersion: rv.APIVersion, Kind: rv.Kind, Response: decide(&rv)})
		if err != nil {
			return err
		}
		if bytes.Contains(raw, []byte(`"patch"`)) {
			patched++
		}
	}
	fmt.Printf("reviews=%d patched=%d\n", n, patched)
	return nil
}

func main() {
	bind := flag.String("bind-address", "127.0.0.1", "address to listen on")
	portFlag := flag.Int("port", 8443, "TCP port, 0 = any free port")
	portFile := flag.String("port-file", "", "write the bound port here once listening")
	certFile := flag.String("tls-cert-file", "", "PEM serving certificate")
	keyFile := flag.String("tls-private-key-file", "", "PEM private key")
	jobsFile := flag.String("jobs", "", "JSON file: a Job or an array of Jobs")
	benchBodies := flag.String("bench-bodies", "", "answer these reviews in-process and exit (with --jobs)")
	benchN := flag.Int("bench-n", 0, "with --bench-bodies: how many reviews to answer")
	flag.Parse()
	if *benchBodies != "" {
		if err := loadJobs(*jobsFile); err != nil {
			log.Fatal(err)
		}
		if err := benchLoop(*benchBodies, *benchN); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *jobsFile == "" || *certFile == "" || *keyFile == "" {
		log.Fatal("--jobs, --tls-cert-file and --tls-private-key-file are required")
	}
	if err := loadJobs(*jobsFile); err != nil {
		log.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*bind, strconv.Itoa(*portFlag)))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/pods/mutate", mutateHandler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	if *portFile != "" {
		p := ln.Addr().(*net.TCPAddr).Port
		tmp := *portFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(p)+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(tmp, *portFile); err != nil {
			log.Fatal(err)
		}
	}
	log.Fatal(srv.ServeTLS(ln, "", ""))
}
