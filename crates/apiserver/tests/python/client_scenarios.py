"""Scenarios run by the official Python client against the embedded API server.

Run by crates/apiserver/tests/it/python.rs with KUBECONFIG and KUBECLIENT_URL set (the
server has its fault admin paths enabled). Prints "ok <scenario>" per scenario; any
failure raises and exits non-zero.
"""

import os
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config(os.environ["KUBECONFIG"])
core = client.CoreV1Api()
NS = "default"


def configmap(name, data):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def pagination():
    for i in range(25):
        core.create_namespaced_config_map(NS, configmap(f"page-{i:02d}", {"i": str(i)}))
    names, token, pages, snapshot = [], None, 0, None
    while True:
        page = core.list_namespaced_config_map(NS, limit=10, _continue=token)
        pages += 1
        snapshot = snapshot or page.metadata.resource_version
        assert page.metadata.resource_version == snapshot, "all pages share the first page's RV"
        names += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert pages == 3, pages
    assert names == [f"page-{i:02d}" for i in range(25)], names


def watch_resume():
    created = core.create_namespaced_config_map(NS, configmap("resume", {"v": "1"}))
    rv = created.metadata.resource_version
    core.patch_namespaced_config_map("resume", NS, {"data": {"v": "2"}})
    core.delete_namespaced_config_map("resume", NS)
    seen = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=2):
        seen.append((event["type"], event["object"].metadata.name))
    assert seen == [("MODIFIED", "resume"), ("DELETED", "resume")], seen


def expired_after_compaction():
    first = core.create_namespaced_config_map(NS, configmap("old", {}))
    core.create_namespaced_config_map(NS, configmap("newer", {}))
    request = urllib.request.Request(os.environ["KUBECLIENT_URL"] + "/_kubeclient/faults/compact", method="POST")
    urllib.request.urlopen(request).read()
    try:
        # The Python client retries a 410 once from the RV it saw, then raises.
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, NS, resource_version=first.metadata.resource_version, timeout_seconds=2
        ):
            pass
    except ApiException as err:
        assert err.status == 410, err
    else:
        raise AssertionError("a watch from a compacted resourceVersion must fail with 410")


def stale_update_conflict():
    created = core.create_namespaced_config_map(NS, configmap("stale", {"v": "1"}))
    fresh = core.read_namespaced_config_map("stale", NS)
    fresh.data = {"v": "2"}
    core.replace_namespaced_config_map("stale", NS, fresh)
    created.data = {"v": "3"}
    try:
        core.replace_namespaced_config_map("stale", NS, created)
    except ApiException as err:
        assert err.status == 409, err
        assert "the object has been modified" in err.body, err.body
    else:
        raise AssertionError("a replace with a stale resourceVersion must fail with 409")


for scenario in (pagination, watch_resume, expired_after_compaction, stale_update_conflict):
    scenario()
    print("ok", scenario.__name__, flush=True)
