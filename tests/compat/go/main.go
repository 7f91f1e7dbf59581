// Command compat drives a CRI endpoint the way the kubelet and crictl <= 1.26 do: grpc-go,
// dialling the bare socket path through a custom dialer, every other option at its default
// (so the socket path goes out as :authority). It walks a pod's life cycle with an image and
// a container, checks each answer's content, and exits non-zero on the first mismatch.
//
// usage: compat [-image REF] [-keep-image] unix:///path/to/socket
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "criharness/runtime/v1"
)

const callTimeout = 60 * time.Second

func main() {
	image := flag.String("image", "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "image to pull, run and remove")
	keepImage := flag.Bool("keep-image", false, "skip RemoveImage (for a runtime whose image others are using)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compat [-image REF] [-keep-image] unix:///path/to/socket")
		os.Exit(2)
	}
	// The kubelet's CRI client (and crictl <= 1.26) strip the scheme and dial the bare path,
	// which grpc-go then also sends as :authority.
	path := strings.TrimPrefix(flag.Arg(0), "unix://")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := grpc.DialContext(ctx, path,
		grpc.WithInsecure(),
		grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}),
	)
	if err != nil {
		log.Fatalf("dial %s: %v", path, err)
	}
	defer conn.Close()
	fmt.Printf("go client: dialled %s (authority %q)\n", path, path)
	lifecycle(pb.NewRuntimeServiceClient(conn), pb.NewImageServiceClient(conn), *image, *keepImage)
	fmt.Println("go client: all steps passed")
}

func call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

func check(step string, err error) {
	if err != nil {
		log.Fatalf("%s: %v", step, err)
	}
}

func expect(step string, ok bool, format string, args ...interface{}) {
	if !ok {
		log.Fatalf("%s: "+format, append([]interface{}{step}, args...)...)
	}
}

func lifecycle(rt pb.RuntimeServiceClient, im pb.ImageServiceClient, image string, keepImage bool) {
	ctx, cancel := call()
	defer cancel()

	v, err := rt.Version(ctx, &pb.VersionRequest{Version: "0.1.0"})
	check("Version", err)
	expect("Version", v.Version == "0.1.0" && v.RuntimeApiVersion == "v1" && v.RuntimeName != "",
		"unexpected answer %v", v)
	fmt.Printf("Version: %s %s %s\n", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)

	spec := &pb.ImageSpec{Image: image}
	pulled, err := im.PullImage(ctx, &pb.PullImageRequest{Image: spec})
	check("PullImage", err)
	expect("PullImage", pulled.ImageRef != "", "no image ref")
	fmt.Printf("PullImage: %s\n", pulled.ImageRef)
	images, err := im.ListImages(ctx, &pb.ListImagesRequest{})
	check("ListImages", err)
	found := false
	for _, i := range images.Images {
		if i.Id == pulled.ImageRef {
			found = contains(i.RepoTags, image)
		}
	}
	expect("ListImages", found, "pulled image %s (tag %s) not listed in %v", pulled.ImageRef, image, images.Images)
	fmt.Printf("ListImages: %d images, pulled one among them\n", len(images.Images))

	labels := map[string]string{"cri-harness.io/run-id": "compat-go"}
	config := &pb.PodSandboxConfig{
		Metadata:     &pb.PodSandboxMetadata{Name: "compat-go", Namespace: "compat-ns", Uid: "compat-go-uid-1"},
		Labels:       labels,
		LogDirectory: "/tmp/compat-go-logs",
		Linux:        &pb.LinuxPodSandboxConfig{},
	}
	run, err := rt.RunPodSandbox(ctx, &pb.RunPodSandboxRequest{Config: config})
	check("RunPodSandbox", err)
	sid := run.PodSandboxId
	expect("RunPodSandbox", sid != "", "no sandbox id")
	fmt.Printf("RunPodSandbox: %s\n", sid)

	listed, err := rt.ListPodSandbox(ctx, &pb.ListPodSandboxRequest{Filter: &pb.PodSandboxFilter{LabelSelector: labels}})
	check("ListPodSandbox", err)
	expect("ListPodSandbox", len(listed.Items) == 1 && listed.Items[0].Id == sid &&
		listed.Items[0].State == pb.PodSandboxState_SANDBOX_READY, "want [%s] ready, got %v", sid, listed.Items)
	fmt.Println("ListPodSandbox: the one sandbox, ready")

	ps, err := rt.PodSandboxStatus(ctx, &pb.PodSandboxStatusRequest{PodSandboxId: sid})
	check("PodSandboxStatus", err)
	expect("PodSandboxStatus", ps.Status.GetId() == sid && ps.Status.GetState() == pb.PodSandboxState_SANDBOX_READY &&
		ps.Status.GetMetadata().GetUid() == "compat-go-uid-1", "unexpected status %v", ps.Status)
	fmt.Printf("PodSandboxStatus: %s ip=%q\n", ps.Status.State, ps.Status.GetNetwork().GetIp())

	cconfig := &pb.ContainerConfig{
		Metadata: &pb.ContainerMetadata{Name: "c1"},
		Image:    spec,
		Labels:   labels,
		Command:  []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
		LogPath:  "c1.log",
	}
	created, err := rt.CreateContainer(ctx, &pb.CreateContainerRequest{PodSandboxId: sid, Config: cconfig, SandboxConfig: config})
	check("CreateContainer", err)
	cid := created.ContainerId
	expect("CreateContainer", cid != "", "no container id")
	fmt.Printf("CreateContainer: %s\n", cid)
	_, err = rt.StartContainer(ctx, &pb.StartContainerRequest{ContainerId: cid})
	check("StartContainer", err)

	containers, err := rt.ListContainers(ctx, &pb.ListContainersRequest{Filter: &pb.ContainerFilter{PodSandboxId: sid}})
	check("ListContainers", err)
	expect("ListContainers", len(containers.Containers) == 1 && containers.Containers[0].Id == cid &&
		containers.Containers[0].State == pb.ContainerState_CONTAINER_RUNNING, "want [%s] running, got %v", cid, containers.Containers)
	fmt.Println("StartContainer+ListContainers: the one container, running")

	cs, err := rt.ContainerStatus(ctx, &pb.ContainerStatusRequest{ContainerId: cid})
	check("ContainerStatus", err)
	expect("ContainerStatus", cs.Status.GetId() == cid && cs.Status.GetState() == pb.ContainerState_CONTAINER_RUNNING &&
		cs.Status.GetMetadata().GetName() == "c1" && cs.Status.GetStartedAt() > 0, "unexpected status %v", cs.Status)
	fmt.Printf("ContainerStatus: %s\n", cs.Status.State)

	_, err = rt.StopPodSandbox(ctx, &pb.StopPodSandboxRequest{PodSandboxId: sid})
	check("StopPodSandbox", err)
	ps, err = rt.PodSandboxStatus(ctx, &pb.PodSandboxStatusRequest{PodSandboxId: sid})
	check("PodSandboxStatus after stop", err)
	expect("StopPodSandbox", ps.Status.GetState() == pb.PodSandboxState_SANDBOX_NOTREADY, "sandbox still %v", ps.Status.GetState())
	cs, err = rt.ContainerStatus(ctx, &pb.ContainerStatusRequest{ContainerId: cid})
	check("ContainerStatus after stop", err)
	expect("StopPodSandbox", cs.Status.GetState() == pb.ContainerState_CONTAINER_EXITED, "container still %v", cs.Status.GetState())
	fmt.Println("StopPodSandbox: sandbox not ready, container exited")

	_, err = rt.RemovePodSandbox(ctx, &pb.RemovePodSandboxRequest{PodSandboxId: sid})
	check("RemovePodSandbox", err)
	_, err = rt.PodSandboxStatus(ctx, &pb.PodSandboxStatusRequest{PodSandboxId: sid})
	expect("RemovePodSandbox", status.Code(err) == codes.NotFound, "status of the removed sandbox: %v", err)
	containers, err = rt.ListContainers(ctx, &pb.ListContainersRequest{Filter: &pb.ContainerFilter{PodSandboxId: sid}})
	check("ListContainers after remove", err)
	expect("RemovePodSandbox", len(containers.Containers) == 0, "containers left: %v", containers.Containers)
	fmt.Println("RemovePodSandbox: sandbox and its container gone")

	if keepImage {
		fmt.Println("RemoveImage: skipped (-keep-image)")
		return
	}
	_, err = im.RemoveImage(ctx, &pb.RemoveImageRequest{Image: spec})
	check("RemoveImage", err)
	gone, err := im.ImageStatus(ctx, &pb.ImageStatusRequest{Image: spec})
	check("ImageStatus after remove", err)
	expect("RemoveImage", gone.Image == nil, "image still there: %v", gone.Image)
	fmt.Println("RemoveImage: image gone")
}

func contains(list []string, item string) bool {
	for _, s := range list {
		if s == item {
			return true
		}
	}
	return false
}
