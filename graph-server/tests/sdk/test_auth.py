"""Cross-tenant attempts through the SDK: a server with API keys `k-alice`
and `k-bob` (sdk_server ... auth). Bob never reads, streams, updates, copies,
searches or deletes Alice's thread: each attempt is a 404, as for a thread
that does not exist; without a key, 401.

Usage: python3 test_auth.py URL
"""
import sys

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError

URL = sys.argv[1]
alice = get_sync_client(url=URL, api_key="k-alice")
bob = get_sync_client(url=URL, api_key="k-bob")

assert httpx.post(f"{URL}/threads", json={}).status_code == 401
tid = alice.threads.create()["thread_id"]
out = alice.runs.wait(tid, "agent", input={"messages": ["secret"]})
assert out == {"messages": ["secret", "echo: secret"], "count": 1}, out
run_id = alice.runs.list(tid)[0]["run_id"]

attempts = {
    "get": lambda: bob.threads.get(tid),
    "update": lambda: bob.threads.update(tid, metadata={"owner": "bob"}),
    "get_state": lambda: bob.threads.get_state(tid),
    "update_state": lambda: bob.threads.update_state(tid, {"messages": ["x"]}),
    "history": lambda: bob.threads.get_history(tid),
    "copy": lambda: bob.threads.copy(tid),
    "wait": lambda: bob.runs.wait(tid, "agent", input={"messages": ["x"]}),
    "stream": lambda: list(bob.runs.stream(tid, "agent", input={"messages": ["x"]})),
    "runs.list": lambda: bob.runs.list(tid),
    "runs.get": lambda: bob.runs.get(tid, run_id),
    "join": lambda: bob.runs.join(tid, run_id),
    "cancel": lambda: bob.runs.cancel(tid, run_id),
    "delete": lambda: bob.threads.delete(tid),
}
for name, attempt in attempts.items():
    try:
        attempt()
        raise AssertionError(f"bob's {name} on alice's thread succeeded")
    except NotFoundError:
        pass
    except httpx.HTTPStatusError as e:  # runs.wait and runs.stream raise httpx's error
        assert e.response.status_code == 404, (name, e.response.status_code)
assert bob.threads.search() == []
assert bob.threads.count() == 0
assert [t["thread_id"] for t in alice.threads.search()] == [tid]
assert alice.threads.get_state(tid)["values"]["messages"] == ["secret", "echo: secret"]
# The store: a caller's namespaces start with its identity.
alice.store.put_item(["alice", "notes"], "n1", {"text": "private"})
assert alice.store.get_item(["alice", "notes"], "n1")["value"] == {"text": "private"}
assert bob.store.get_item(["alice", "notes"], "n1") is None
assert bob.store.search_items(["alice"])["items"] == []
assert bob.store.search_items([])["items"] == []
assert bob.store.list_namespaces()["namespaces"] == []
try:
    bob.store.put_item(["alice", "notes"], "n1", {"text": "overwritten"})
    raise AssertionError("bob wrote into alice's namespace")
except httpx.HTTPStatusError as e:
    assert e.response.status_code == 403, e.response.status_code
assert alice.store.get_item(["alice", "notes"], "n1")["value"] == {"text": "private"}
print(f"auth suite: {len(attempts)} cross-tenant attempts refused, 0 failed")
