"""The container and pod parsers over real /proc-shaped files in a tmp_path tree (issue 14, section 3)."""

from __future__ import annotations

import os

import pytest

from gpumem_tui.sources.procfs import (
    Listening,
    ProcFiles,
    environment,
    listening,
    local_addresses,
    pod_uid,
    visible_devices,
)
from tests.sources.proc_tree import TCP_HEADER, fib_trie, ourselves, pod_process, tcp_line, write

UID = "4a1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
SYSTEMD_UID = UID.replace("-", "_")
CONTAINER = "3f9a0c1e5b7d2a4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d"


@pytest.mark.parametrize(
    "cgroup",
    [
        # cgroup v2, systemd driver, containerd
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice/"
        f"cri-containerd-{CONTAINER}.scope\n",
        # cgroup v2, CRI-O, a guaranteed pod
        f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/crio-{CONTAINER}.scope\n",
        # cgroup v2, docker (dockershim)
        f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYSTEMD_UID}.slice/docker-{CONTAINER}.scope\n",
        # cgroup v1, cgroupfs driver: one line per controller
        f"12:pids:/kubepods/besteffort/pod{UID}/{CONTAINER}\n11:memory:/kubepods/besteffort/pod{UID}/{CONTAINER}\n",
        f"4:memory:/kubepods/pod{UID}/{CONTAINER}\n",
    ],
)
def test_the_pod_uid_from_every_kind_of_kubepods_cgroup(cgroup):
    assert pod_uid(cgroup) == UID


@pytest.mark.parametrize(
    "cgroup",
    ["0::/user.slice/user-1000.slice/session-3.scope\n", f"0::/system.slice/docker-{CONTAINER}.scope\n", "", None],
)
def test_no_pod_outside_kubepods(cgroup):
    assert pod_uid(cgroup) is None


def test_the_pod_is_named_from_the_kubelets_log_directories(tmp_path):
    proc, logs = tmp_path / "proc", tmp_path / "pods"
    write(
        proc, 4242, "cgroup", f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{CONTAINER}.scope\n"
    )
    (logs / f"team-a_vllm-chat-7d9f_{UID}").mkdir(parents=True)
    (logs / "kube-system_coredns-5d78_0b2c3d4e-0000-4000-8000-000000000001").mkdir()
    assert ProcFiles(proc, logs).pod(4242) == "team-a/vllm-chat-7d9f"


def test_else_from_the_containers_own_files_else_by_uid(tmp_path):
    proc, logs = tmp_path / "proc", tmp_path / "absent"
    write(proc, 4242, "cgroup", f"4:memory:/kubepods/pod{UID}/{CONTAINER}\n")
    files = ProcFiles(proc, logs)
    assert files.pod(4242) == f"pod {UID}"
    write(proc, 4242, "root/etc/hostname", "vllm-chat-7d9f\n")
    write(proc, 4242, "root/var/run/secrets/kubernetes.io/serviceaccount/namespace", "team-a")
    assert files.pod(4242) == "team-a/vllm-chat-7d9f"
    write(proc, 4242, "root/etc/hostname", "root:$6$salt$hash:19000:0:99999:7:::\n")  # not a pod's name
    assert files.pod(4242) == f"pod {UID}"


def test_a_process_outside_pods_or_unreadable_has_no_pod(tmp_path):
    write(tmp_path, 7, "cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n")
    files = ProcFiles(tmp_path, tmp_path / "pods")
    assert files.pod(7) is None and files.pod(8) is None  # 8: no such pid, never an exception


def test_listening_sockets_of_tcp_and_tcp6():
    table = (
        TCP_HEADER
        + tcp_line(0, "0.0.0.0", 8000)
        + tcp_line(1, "10.244.1.7", 8000, state="01")  # an established connection: not listening
        + tcp_line(2, "127.0.0.1", 9090)
    )
    assert listening(table) == [Listening("0.0.0.0", 8000), Listening("127.0.0.1", 9090)]
    assert listening(TCP_HEADER + tcp_line(0, "::", 8001)) == [Listening("::", 8001)]
    assert listening(TCP_HEADER + tcp_line(0, "fd00::7", 8002)) == [Listening("fd00::7", 8002)]
    assert listening(TCP_HEADER + "   0: ZZZ:1F40 00000000:0000 0A\n") == []
    assert listening(None) == []


def test_the_real_kernels_socket_table_parses():
    """This machine's own /proc/net/tcp: whatever listens here is read without error."""
    with open("/proc/net/tcp") as handle:
        for entry in listening(handle.read()):
            assert 0 < entry.port < 65536


def test_a_pods_own_address_from_fib_trie():
    assert local_addresses(fib_trie("10.244.1.7")) == ["10.244.1.7"]
    assert local_addresses(fib_trie("127.0.0.2"), loopback=True) == ["127.0.0.2"]  # the demo's; 127.0.0.1 never
    assert local_addresses(fib_trie("127.0.0.2")) == [] and local_addresses(fib_trie("169.254.169.254")) == []
    assert local_addresses("") == [] and local_addresses(None) == []


def test_environ_with_nul_separators_and_visible_devices():
    env = environment("PATH=/usr/bin\0NVIDIA_VISIBLE_DEVICES=GPU-aa,GPU-bb\0JUNK\0CUDA_VISIBLE_DEVICES=1\0")
    assert env["NVIDIA_VISIBLE_DEVICES"] == "GPU-aa,GPU-bb" and "JUNK" not in env
    assert visible_devices(env) == ["GPU-bb"]  # CUDA's index counts within the container's cards
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "MIG-1c2d-0"}) == ["MIG-1c2d-0"]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "0,2"}) == ["0", "2"]
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "all"}) is None
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "none"}) == []
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "void"}) == []
    assert visible_devices({}) is None


def test_another_network_namespace_its_sockets_and_address(tmp_path):
    ourselves(tmp_path)
    pod_process(tmp_path, 4242, "0::/\n", "10.244.1.7", [("0.0.0.0", 8000), ("::", 8001)])
    write(tmp_path, 77, "ns/net", "net:[4026531840]")
    files = ProcFiles(tmp_path)
    assert files.other_network(4242) is True and files.other_network(77) is False
    assert files.other_network(99) is None
    assert files.listening(4242) == [Listening("0.0.0.0", 8000), Listening("::", 8001)]
    assert files.addresses(4242) == ["10.244.1.7"] and files.listening(99) is None


def test_the_real_proc_root_is_read_and_unreadable_is_none():
    files = ProcFiles()
    assert files.other_network(os.getpid()) is False
    assert files.text(4_194_304 + 17, "cgroup") is None


def test_without_the_ns_links_the_routing_tables_tell_the_namespaces_apart(tmp_path):
    """Not root, another user's `ns/net` cannot be read, but every process's `net/fib_trie` can."""
    write(tmp_path, "self", "net/fib_trie", fib_trie("192.0.2.2"))
    pod_process(tmp_path, 4242, "0::/\n", "10.244.1.7", [("0.0.0.0", 8000)])
    (tmp_path / "4242" / "ns" / "net").unlink()
    write(tmp_path, 77, "net/fib_trie", fib_trie("192.0.2.2"))
    files = ProcFiles(tmp_path)
    assert files.other_network(4242) is True and files.other_network(77) is False


def test_a_containers_symlink_to_a_host_file_is_resolved_inside_its_root(tmp_path):
    """An absolute symlink under /proc/PID/root resolves against the reader's root (the host's): a pod that
    makes its /etc/hostname point at a host file must not get that file read and shown as its name."""
    proc, host_file = tmp_path / "proc", tmp_path / "host-secret"
    host_file.write_text("node-machine-id-0123\n")  # a Kubernetes-shaped name, as /etc/machine-id is
    write(proc, 4242, "cgroup", f"4:memory:/kubepods/pod{UID}/{CONTAINER}\n")
    write(proc, 4242, "root/var/run/secrets/kubernetes.io/serviceaccount/namespace", "team-a")
    (proc / "4242/root/etc").mkdir(parents=True)
    (proc / "4242/root/etc/hostname").symlink_to(host_file)
    # from root/etc, four levels up is tmp_path: the link climbs out of the container's root to host_file
    (proc / "4242/root/etc/escape").symlink_to(os.path.join(*[os.pardir] * 4, host_file.name))
    files = ProcFiles(proc, tmp_path / "absent")
    assert files.pod(4242) == f"pod {UID}"
    (proc / "4242/root/etc/hostname").unlink()
    (proc / "4242/root/etc/hostname").symlink_to("escape")  # relative, climbing out with ..
    assert files.pod(4242) == f"pod {UID}"
    # a symlink that stays inside the container's root is the container's own file
    write(proc, 4242, "root/etc/real-hostname", "vllm-chat-7d9f\n")
    (proc / "4242/root/etc/hostname").unlink()
    (proc / "4242/root/etc/hostname").symlink_to("/etc/real-hostname")
    assert files.pod(4242) == "team-a/vllm-chat-7d9f"


def test_a_fifo_or_device_in_the_containers_root_is_not_read(tmp_path):
    """A FIFO as /etc/hostname would block open() until someone writes it: the reader would hang."""
    import threading

    proc = tmp_path / "proc"
    write(proc, 4242, "cgroup", f"4:memory:/kubepods/pod{UID}/{CONTAINER}\n")
    write(proc, 4242, "root/var/run/secrets/kubernetes.io/serviceaccount/namespace", "team-a")
    (proc / "4242/root/etc").mkdir(parents=True)
    os.mkfifo(proc / "4242/root/etc/hostname")
    found: list[str | None] = []
    reader = threading.Thread(target=lambda: found.append(ProcFiles(proc, tmp_path / "absent").pod(4242)), daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():
        with open(proc / "4242/root/etc/hostname", "w"):  # unblock the stuck reader before failing
            pass
        pytest.fail("pod() blocked opening a FIFO under the container's root")
    assert found == [f"pod {UID}"]


STATIC_UID = "8d5c2bc7a8b2a1e67d49d2b3c37e6c1c"
"""A static (mirror) pod's UID is the hash of its manifest: 32 hex digits, no dashes."""


@pytest.mark.parametrize(
    "cgroup",
    [
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{STATIC_UID}.slice/"
        f"cri-containerd-{CONTAINER}.scope\n",
        f"4:memory:/kubepods/burstable/pod{STATIC_UID}/{CONTAINER}\n",
    ],
)
def test_a_static_pods_hash_uid(cgroup):
    assert pod_uid(cgroup) == STATIC_UID


def test_nvidia_visible_devices_indices_are_the_hosts_and_the_container_numbers_its_cards_from_0():
    """`docker run --gpus '"device=2,3"'` sets NVIDIA_VISIBLE_DEVICES=2,3 (host numbers); inside, NVML and
    CUDA number the container's two cards 0 and 1, in the host's (PCI) order."""
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "2,3"}) == ["0", "1"]
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "3,2", "CUDA_VISIBLE_DEVICES": "1"}) == ["1"]
    assert visible_devices({"NVIDIA_VISIBLE_DEVICES": "2:0,2:1"}) == ["0"]  # MIG devices by index: card 2's


def test_cuda_visible_devices_stops_at_the_first_entry_it_cannot_read():
    """CUDA reads the list up to the first invalid entry: `0,-1,2` is GPU 0 only, `-1` hides every GPU."""
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "0,-1,2"}) == ["0"]
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    assert visible_devices({"CUDA_VISIBLE_DEVICES": "GPU-aa,junk,GPU-bb"}) == ["GPU-aa"]


def test_a_huge_device_list_is_read_only_as_far_as_a_node_has_devices():
    """environ is the process's own memory to rewrite: a million selectors would be matched against every
    GPU on every sample. A node has at most a few dozen GPUs and MIG devices."""
    huge = ",".join(f"GPU-{i:08x}" for i in range(100_000))
    assert len(visible_devices({"NVIDIA_VISIBLE_DEVICES": huge}) or []) <= 128
    assert len(visible_devices({"CUDA_VISIBLE_DEVICES": huge}) or []) <= 128
