// A plugin for Skiff's NRI tests, built on the NRI plugin stub of github.com/containerd/nri: it
// speaks NRI exactly as the community's plugins do. -mode picks what it does:
//
//	logger     appends "<Event> <pod> <container>" to -log for every event
//	adjust     at CreateContainer adds the environment variable, annotation, device, OCI hook,
//	           rlimit and memory limit its flags name, to containers whose name starts with -only (all if empty)
//	validator  refuses every container whose name starts with -refuse, with a reason
//	default-validator  the community's default validator (plugins/default-validator of the
//	           containerd/nri module), refusing hook injection and requiring plugins as flags say
//	updater    answers CreateContainer of a container whose name starts with -trigger with an update
//	           of -target's memory limit to -reply-memory; after PostStartContainer of that container
//	           asks the runtime (UpdateContainers) to set -target's memory limit to -memory, to update
//	           a container that does not exist and to evict -evict; the failed updates, and the
//	           UpdateContainer events it is sent, go to -log
//	hang       never answers CreateContainer
//	crash      exits in the middle of CreateContainer
//	pod-gate   at RunPodSandbox refuses pods whose name starts with -refuse, with a reason, and
//	           holds pods whose name starts with -hold until the file -release exists (appending
//	           "holding <pod>" to -log first)
//	container-gate  at CreateContainer holds containers whose name starts with -hold until the
//	           file -release exists (appending "holding <container>" to -log first)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	validator "github.com/containerd/nri/plugins/default-validator"
)

var (
	mode        = flag.String("mode", "logger", "logger, adjust, updater, validator, default-validator, hang, crash, pod-gate or container-gate")
	name        = flag.String("name", "", "plugin name")
	idx         = flag.String("idx", "", "plugin index")
	socket      = flag.String("socket", "", "NRI socket")
	logPath     = flag.String("log", "", "logger: file the events go to (Configure logs its configuration as the pod name)")
	only        = flag.String("only", "", "adjust: container name prefix")
	env         = flag.String("env", "", "adjust: KEY=VALUE")
	annotation  = flag.String("annotation", "", "adjust: KEY=VALUE")
	device      = flag.String("device", "", "adjust: PATH:MAJOR:MINOR, a character device")
	hook        = flag.String("hook", "", "adjust: a createRuntime hook, a /bin/sh script")
	nofile      = flag.Uint64("nofile", 0, "adjust: RLIMIT_NOFILE soft and hard")
	memory      = flag.Int64("memory", 0, "adjust: memory limit in bytes")
	trigger     = flag.String("trigger", "", "updater: name prefix of the container whose creation and start trigger the updates")
	target      = flag.String("target", "", "updater: name of the container whose memory limit is updated")
	replyMemory = flag.Int64("reply-memory", 0, "updater: memory limit in bytes the CreateContainer answer sets")
	evict       = flag.String("evict", "", "updater: name of the container evicted")
	refuse      = flag.String("refuse", "", "validator: container name prefix to refuse; pod-gate: pod name prefix")
	hold        = flag.String("hold", "", "pod-gate, container-gate: pod or container name prefix to hold")
	release     = flag.String("release", "", "pod-gate, container-gate: the file whose existence lets held pods or containers go")
	rejectHooks = flag.Bool("reject-hooks", false, "default-validator: refuse OCI hook injection")
	required    = flag.String("required", "", "default-validator: plugins that must have been consulted, comma-separated")
)

type logger struct{ mu sync.Mutex }

func (l *logger) write(event string, pod *api.PodSandbox, ctr *api.Container) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	c := "-"
	if ctr != nil {
		c = ctr.GetName()
	}
	_, err = fmt.Fprintf(f, "%s %s %s\n", event, pod.GetName(), c)
	return err
}

func (l *logger) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	return 0, l.write("Configure", &api.PodSandbox{Name: strings.TrimSpace(config)}, nil)
}

func (l *logger) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, p := range pods {
		if err := l.write("Synchronize", p, nil); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
func (l *logger) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	return l.write("RunPodSandbox", p, nil)
}
func (l *logger) StopPodSandbox(_ context.Context, p *api.PodSandbox) error {
	return l.write("StopPodSandbox", p, nil)
}
func (l *logger) RemovePodSandbox(_ context.Context, p *api.PodSandbox) error {
	return l.write("RemovePodSandbox", p, nil)
}
func (l *logger) CreateContainer(_ context.Context, p *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, l.write("CreateContainer", p, c)
}
func (l *logger) PostCreateContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	return l.write("PostCreateContainer", p, c)
}
func (l *logger) StartContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	return l.write("StartContainer", p, c)
}
func (l *logger) PostStartContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	return l.write("PostStartContainer", p, c)
}
func (l *logger) UpdatePodSandbox(_ context.Context, p *api.PodSandbox, _, _ *api.LinuxResources) error {
	return l.write("UpdatePodSandbox", p, nil)
}
func (l *logger) PostUpdatePodSandbox(_ context.Context, p *api.PodSandbox) error {
	return l.write("PostUpdatePodSandbox", p, nil)
}
func (l *logger) UpdateContainer(_ context.Context, p *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, l.write(fmt.Sprintf("UpdateContainer(cpu.shares=%d)", r.GetCpu().GetShares().GetValue()), p, c)
}
func (l *logger) PostUpdateContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	return l.write("PostUpdateContainer", p, c)
}
func (l *logger) StopContainer(_ context.Context, p *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, l.write("StopContainer", p, c)
}
func (l *logger) RemoveContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	return l.write("RemoveContainer", p, c)
}

type adjuster struct{}

func split(kv string) (string, string) {
	k, v, _ := strings.Cut(kv, "=")
	return k, v
}

func (adjuster) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	if !strings.HasPrefix(c.GetName(), *only) {
		return a, nil, nil
	}
	if *env != "" {
		a.AddEnv(split(*env))
	}
	if *annotation != "" {
		a.AddAnnotation(split(*annotation))
	}
	if *device != "" {
		var path string
		var major, minor int64
		parts := strings.Split(*device, ":")
		path = parts[0]
		fmt.Sscan(parts[1], &major)
		fmt.Sscan(parts[2], &minor)
		a.AddDevice(&api.LinuxDevice{Path: path, Type: "c", Major: major, Minor: minor, FileMode: &api.OptionalFileMode{Value: 0o666}})
	}
	if *hook != "" {
		a.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{Path: "/bin/sh", Args: []string{"sh", "-c", *hook}}}})
	}
	if *nofile != 0 {
		a.AddRlimit("RLIMIT_NOFILE", *nofile, *nofile)
	}
	if *memory != 0 {
		a.SetLinuxMemoryLimit(*memory)
	}
	return a, nil, nil
}

// The containers the updater knows of, by name, from Synchronize and PostCreateContainer.
type updater struct {
	mu   sync.Mutex
	ids  map[string]string
	stub stub.Stub
	log  logger
}

func (u *updater) remember(c *api.Container) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ids[c.GetName()] = c.GetId()
}

func (u *updater) id(name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ids[name]
}

func memoryUpdate(id string, limit int64) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: limit}}}}}
}

func (u *updater) Synchronize(_ context.Context, _ []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, c := range ctrs {
		u.remember(c)
	}
	return nil, nil
}

func (u *updater) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if *trigger == "" || !strings.HasPrefix(c.GetName(), *trigger) || *replyMemory == 0 {
		return nil, nil, nil
	}
	return nil, []*api.ContainerUpdate{memoryUpdate(u.id(*target), *replyMemory)}, nil
}

func (u *updater) PostCreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	u.remember(c)
	return nil
}

func (u *updater) UpdateContainer(_ context.Context, p *api.PodSandbox, c *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, u.log.write("UpdateContainer", p, c)
}

// The runtime connection of the stub: its UpdateContainers carries no evictions, the protocol does.
func runtimeOf(s stub.Stub) api.RuntimeService {
	field := reflect.ValueOf(s).Elem().FieldByName("runtime")
	return *(*api.RuntimeService)(unsafe.Pointer(field.UnsafeAddr()))
}

// Asked once the event is answered, as a plugin acting on its own would.
func (u *updater) PostStartContainer(_ context.Context, p *api.PodSandbox, c *api.Container) error {
	if *trigger != "" && strings.HasPrefix(c.GetName(), *trigger) {
		go u.ask(p, c)
	}
	return nil
}

func (u *updater) ask(p *api.PodSandbox, c *api.Container) {
	req := &api.UpdateContainersRequest{
		Update: []*api.ContainerUpdate{memoryUpdate(u.id(*target), *memory), memoryUpdate("no-such-container", *memory)},
	}
	if *evict != "" {
		req.Evict = []*api.ContainerEviction{{ContainerId: u.id(*evict), Reason: "evicted by the updater"}}
	}
	rpl, err := runtimeOf(u.stub).UpdateContainers(context.Background(), req)
	if err != nil {
		_ = u.log.write("UpdateContainers-error", &api.PodSandbox{Name: strings.ReplaceAll(err.Error(), " ", "_")}, nil)
		return
	}
	for _, f := range rpl.GetFailed() {
		_ = u.log.write("failed", p, &api.Container{Name: f.GetContainerId()})
	}
	_ = u.log.write("UpdateContainers-done", p, c)
}

type refuser struct{}

func (refuser) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if *refuse != "" && strings.HasPrefix(req.GetContainer().GetName(), *refuse) {
		return fmt.Errorf("containers named %s* are not allowed on this node", *refuse)
	}
	return nil
}

type podGate struct{}

func (podGate) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	if *refuse != "" && strings.HasPrefix(p.GetName(), *refuse) {
		return fmt.Errorf("pods named %s* are not allowed on this node", *refuse)
	}
	holdUntilReleased(p.GetName())
	return nil
}

// holdUntilReleased returns once -release exists when name starts with -hold, at once otherwise.
func holdUntilReleased(name string) {
	if *hold == "" || !strings.HasPrefix(name, *hold) {
		return
	}
	if f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "holding %s\n", name)
		f.Close()
	}
	for {
		if _, err := os.Stat(*release); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type containerGate struct{}

func (containerGate) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	holdUntilReleased(c.GetName())
	return nil, nil, nil
}

type hanger struct{}

func (hanger) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	select {}
}

type crasher struct{}

func (crasher) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	os.Exit(3)
	return nil, nil, nil
}

func main() {
	flag.Parse()
	var impl interface{}
	switch *mode {
	case "logger":
		impl = &logger{}
	case "adjust":
		impl = adjuster{}
	case "updater":
		impl = &updater{ids: map[string]string{}}
	case "validator":
		impl = refuser{}
	case "default-validator":
		cfg := &validator.DefaultValidatorConfig{Enable: true, RejectOCIHookAdjustment: *rejectHooks}
		if *required != "" {
			cfg.RequiredPlugins = strings.Split(*required, ",")
		}
		impl = validator.NewDefaultValidator(cfg)
	case "hang":
		impl = hanger{}
	case "crash":
		impl = crasher{}
	case "pod-gate":
		impl = podGate{}
	case "container-gate":
		impl = containerGate{}
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", *mode)
		os.Exit(2)
	}
	// Started by the runtime, the plugin has its name and index from the environment.
	opts := []stub.Option{}
	if *name != "" {
		opts = append(opts, stub.WithPluginName(*name))
	}
	if *idx != "" {
		opts = append(opts, stub.WithPluginIdx(*idx))
	}
	if *socket != "" {
		opts = append(opts, stub.WithSocketPath(*socket))
	}
	s, err := stub.New(impl, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if u, ok := impl.(*updater); ok {
		u.stub = s
	}
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
