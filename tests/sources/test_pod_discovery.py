"""Engines in pods, seen from the host: discovery reaches each at its pod's own address, on the port its
socket table shows, and says so; where /proc cannot be read it probes as before and says why (issue 14)."""

from __future__ import annotations

from gpumem_tui.demo import ManualClock, SimulatedNode, demo_collector, load_scenario
from gpumem_tui.demo.engine_server import MockEngineServer
from gpumem_tui.sources.engines.discovery import survey
from gpumem_tui.sources.feed import LiveFeed
from gpumem_tui.sources.procfs import ProcFiles
from tests.sources.proc_tree import ourselves, pod_process, write

UID_A = "4a1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
UID_B = "5b2e3d4c-6f70-4b8c-9dae-1f2a3b4c5d6e"


def _cgroup(uid: str) -> str:
    pod = f"kubepods-burstable-pod{uid.replace('-', '_')}.slice"
    return f"0::/kubepods.slice/kubepods-burstable.slice/{pod}/cri-containerd-9c1d.scope\n"


def _two_pods(tmp_path):
    proc, logs = tmp_path / "proc", tmp_path / "pods"
    ourselves(proc)
    pod_process(proc, 4242, _cgroup(UID_A), "10.244.1.7", [("0.0.0.0", 8000)])
    pod_process(proc, 5353, _cgroup(UID_B), "10.244.2.9", [("::", 8000), ("127.0.0.1", 9090)])
    (logs / f"team-a_vllm-chat-7d9f_{UID_A}").mkdir(parents=True)
    (logs / f"team-b_vllm-code-41c2_{UID_B}").mkdir()
    return ProcFiles(proc, logs)


VLLM = "/usr/bin/python3 /usr/local/bin/vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000"


def test_two_pods_on_one_port_are_two_endpoints_at_their_pod_addresses(tmp_path):
    files = _two_pods(tmp_path)
    found = survey([(4242, VLLM), (5353, VLLM), (4300, "VLLM::EngineCore", 4242)], (), files.whereabouts)
    assert [(e.url, e.pids) for e in found.endpoints] == [
        ("http://10.244.1.7:8000", (4242, 4300)),
        ("http://10.244.2.9:8000", (5353,)),
    ]
    assert found.notes == [
        "pid 4242 runs in another network namespace (pod team-a/vllm-chat-7d9f); probed at its pod address "
        "10.244.1.7:8000 from its socket table",
        "pid 5353 runs in another network namespace (pod team-b/vllm-code-41c2); probed at its pod address "
        "10.244.2.9:8000 from its socket table",
    ]


def test_the_port_comes_from_the_socket_table_when_the_command_line_does_not_say_it(tmp_path):
    files = _two_pods(tmp_path)
    pod_process(files.proc, 4242, _cgroup(UID_A), "10.244.1.7", [("0.0.0.0", 8080), ("127.0.0.1", 9090)])
    found = survey([(4242, "vllm serve m")], (), files.whereabouts)
    assert [e.url for e in found.endpoints] == ["http://10.244.1.7:8080"]
    assert found.notes[0].endswith(
        "probed at its pod address 10.244.1.7:8080 from its socket table (its command line says 8000)"
    )


def test_an_engine_serving_on_its_pod_address_is_this_nodes(tmp_path):
    files = _two_pods(tmp_path)
    found = survey([(4242, "vllm serve m --host 10.244.1.7 --port 8000")], ["192.0.2.2"], files.whereabouts)
    assert [e.url for e in found.endpoints] == ["http://10.244.1.7:8000"]


def test_not_root_probes_as_before_and_says_why(tmp_path):
    """Its cgroup can be read by anyone; its network namespace only by root: the note says what to do."""
    proc = tmp_path / "proc"
    ourselves(proc)
    write(proc, 4242, "cgroup", _cgroup(UID_A))
    found = survey([(4242, VLLM)], (), ProcFiles(proc, tmp_path / "pods").whereabouts)
    assert [e.url for e in found.endpoints] == ["http://127.0.0.1:8000"]
    assert found.notes == [
        f"pid 4242 runs in pod pod {UID_A}, whose network namespace cannot be read: probed at 127.0.0.1:8000 "
        "as its command line says (run as root to reach engines in pods)"
    ]


def test_an_engine_in_our_own_namespace_or_a_broken_look_changes_nothing(tmp_path):
    proc = tmp_path / "proc"
    ourselves(proc)
    write(proc, 77, "ns/net", "net:[4026531840]")

    def broken(pid: int):
        raise OSError(f"/proc/{pid} is gone")

    for look in (ProcFiles(proc).whereabouts, broken, None):
        found = survey([(77, VLLM)], (), look)
        assert [e.url for e in found.endpoints] == ["http://127.0.0.1:8000"] and found.notes == []


async def test_the_live_feed_reaches_a_pod_at_its_address(tmp_path):
    """A real engine server on 127.0.0.2 plays the pod: its /proc says it listens there, its command line
    says port 8000 on every address; the feed's discovery probes it where it is, and it answers."""
    state = SimulatedNode(load_scenario("healthy-8b"), clock=ManualClock(300)).engine_states()[0]
    with MockEngineServer([state], host="127.0.0.2") as server:
        port = int(server.url.rsplit(":", 1)[1])
        proc, logs = tmp_path / "proc", tmp_path / "pods"
        ourselves(proc)
        pod_process(proc, 4242, _cgroup(UID_A), "127.0.0.2", [("127.0.0.2", port)])
        (logs / f"team-a_vllm-chat-7d9f_{UID_A}").mkdir(parents=True)
        collector, _ = demo_collector("idle-node", clock=ManualClock(10))
        feed = LiveFeed(
            collector,
            lambda: [(4242, VLLM.split() + ["--host", "0.0.0.0"])],
            [],
            engine_wait_s=None,
            look=ProcFiles(proc, logs, loopback=True).whereabouts,
        )
        sample = await feed.sample()
        await feed.aclose()
    assert [(e.url, e.state, e.pids) for e in sample.engines] == [(f"http://127.0.0.2:{port}", "ok", [4242])]
    assert [e.message for e in sample.errors if e.source == "discovery"] == [
        "pid 4242 runs in another network namespace (pod team-a/vllm-chat-7d9f); probed at its pod address "
        f"127.0.0.2:{port} from its socket table (its command line says 8000)"
    ]


def test_an_engine_listening_only_on_its_pods_loopback_is_said_unreachable(tmp_path):
    files = _two_pods(tmp_path)
    pod_process(files.proc, 4242, _cgroup(UID_A), "10.244.1.7", [("127.0.0.1", 8000)])
    found = survey([(4242, "vllm serve m --host 127.0.0.1 --port 8000")], (), files.whereabouts)
    assert [e.url for e in found.endpoints] == ["http://10.244.1.7:8000"]
    assert found.notes[0].endswith(
        "probed at its pod address 10.244.1.7:8000 as its command line says (its socket table shows no listener "
        "reachable from here)"
    )


def test_a_pod_cannot_send_the_probe_to_the_hosts_loopback_or_link_local_addresses(tmp_path):
    """A pod with NET_ADMIN may give itself any address. 127.0.0.5 or 169.254.169.254 in its own namespace
    is, probed from the host, the host's loopback or its link-local neighbour (a cloud metadata service): not
    the pod. Such an address is never taken as the pod's; the engine is probed as its command line says."""
    files = _two_pods(tmp_path)
    for hostile in ("127.0.0.5", "169.254.169.254"):
        pod_process(files.proc, 4242, _cgroup(UID_A), hostile, [("0.0.0.0", 8000)])
        found = survey([(4242, "vllm serve m --port 8000")], [], files.whereabouts)
        assert [e.url for e in found.endpoints] == ["http://127.0.0.1:8000"], (hostile, found)
        assert "cannot be read: probed at 127.0.0.1:8000 as its command line says" in found.notes[0]
