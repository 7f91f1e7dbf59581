#!/usr/bin/env python3
"""Drives a CRI endpoint with a standard, independent gRPC client (Python grpcio).

crictl is not packaged for this machine, so this script plays its part: it generates Python
stubs from proto/runtime/v1/api.proto with grpcio-tools and walks the life cycle crictl users
walk (version; pod sandbox run/inspect/list/stop/remove; container create/start/list/inspect/
stop/remove; image pull/list/inspect/remove). Any mismatch raises, so the exit code tells.

The channel keeps grpcio's defaults, so gRPC C-core sends its own `:authority` for a unix
socket (the socket path, percent-encoded since 1.57); `--authority localhost` sends what
Kubernetes' device-plugin and CSI clients send instead.

usage: standard_client.py unix:///path/to/socket [--image REF] [--authority NAME]
"""
import argparse
import importlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def stubs():
    out = tempfile.mkdtemp(prefix="cri-stubs-")
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
         f"--python_out={out}", f"--grpc_python_out={out}", "runtime/v1/api.proto"],
        check=True,
    )
    for d in ("runtime", "runtime/v1"):
        open(os.path.join(out, d, "__init__.py"), "a").close()
    sys.path.insert(0, out)
    return (importlib.import_module("runtime.v1.api_pb2"),
            importlib.import_module("runtime.v1.api_pb2_grpc"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("--image", default="registry.k8s.io/e2e-test-images/busybox:1.36.1-1")
    parser.add_argument("--authority", help="override the channel's :authority")
    args = parser.parse_args()
    import grpc
    pb, rpc = stubs()
    options = [("grpc.default_authority", args.authority)] if args.authority else []
    print(f"grpc {grpc.__version__}, authority: {args.authority or 'grpcio default'}")
    channel = grpc.insecure_channel(args.endpoint, options=options)
    rt = rpc.RuntimeServiceStub(channel)
    im = rpc.ImageServiceStub(channel)
    t = 10

    v = rt.Version(pb.VersionRequest(version="0.1.0"), timeout=t)
    print(f"version: {v.version} {v.runtime_name} {v.runtime_version} {v.runtime_api_version}")
    assert v.version == "0.1.0" and v.runtime_api_version == "v1", v

    pulled = im.PullImage(pb.PullImageRequest(image=pb.ImageSpec(image=args.image)), timeout=60)
    print(f"image pull: {pulled.image_ref}")
    listed = im.ListImages(pb.ListImagesRequest(), timeout=t).images
    assert any(args.image in i.repo_tags or i.id == pulled.image_ref for i in listed), listed
    status = im.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=args.image)), timeout=t)
    assert status.image.id == pulled.image_ref, status
    print(f"image inspect: {status.image.id} size={status.image.size}")

    meta = pb.PodSandboxMetadata(name="compat", namespace="compat-ns", uid="compat-uid-1", attempt=0)
    labels = {"cri-harness.io/run-id": "compat"}
    config = pb.PodSandboxConfig(metadata=meta, labels=labels, log_directory="/tmp/compat-logs",
                                 linux=pb.LinuxPodSandboxConfig())
    sid = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=config), timeout=60).pod_sandbox_id
    print(f"sandbox run: {sid}")
    s = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid), timeout=t).status
    assert s.state == pb.SANDBOX_READY and s.metadata.uid == "compat-uid-1", s
    print(f"sandbox inspect: state={pb.PodSandboxState.Name(s.state)} ip={s.network.ip!r}")
    items = rt.ListPodSandbox(pb.ListPodSandboxRequest(
        filter=pb.PodSandboxFilter(label_selector=labels)), timeout=t).items
    assert [i.id for i in items] == [sid], items

    cmeta = pb.ContainerMetadata(name="c1", attempt=0)
    cconfig = pb.ContainerConfig(
        metadata=cmeta, image=pb.ImageSpec(image=args.image), labels=labels,
        command=["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"], log_path="c1.log")
    cid = rt.CreateContainer(pb.CreateContainerRequest(
        pod_sandbox_id=sid, config=cconfig, sandbox_config=config), timeout=60).container_id
    print(f"container create: {cid}")
    rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid), timeout=t).status
    assert cs.state == pb.CONTAINER_RUNNING, cs
    print(f"container inspect: state={pb.ContainerState.Name(cs.state)}")
    listed = rt.ListContainers(pb.ListContainersRequest(
        filter=pb.ContainerFilter(pod_sandbox_id=sid)), timeout=t).containers
    assert [c.id for c in listed] == [cid], listed
    rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=10), timeout=60)
    cs = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid), timeout=t).status
    assert cs.state == pb.CONTAINER_EXITED, cs
    print(f"container stop: exit_code={cs.exit_code} reason={cs.reason}")
    rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=60)
    assert not rt.ListContainers(pb.ListContainersRequest(
        filter=pb.ContainerFilter(pod_sandbox_id=sid)), timeout=t).containers

    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=60)
    s = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid), timeout=t).status
    assert s.state == pb.SANDBOX_NOTREADY, s
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid), timeout=60)
    try:
        rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=sid), timeout=t)
        raise AssertionError("removed sandbox still has a status")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.NOT_FOUND, err
    print("sandbox stop+remove: ok")

    im.RemoveImage(pb.RemoveImageRequest(image=pb.ImageSpec(image=args.image)), timeout=60)
    gone = im.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=args.image)), timeout=t)
    assert not gone.HasField("image"), gone
    print("image remove: ok")
    print("standard client: all steps passed")


if __name__ == "__main__":
    main()
