"""A server killed mid-run (SIGKILL) leaves the run to the next server on the
same database, which finishes it from its last checkpoint: the input is
applied once, the run ends `success`.

Usage: python3 restart.py SERVER_BINARY PORT WORKDIR
"""
import subprocess
import sys
import time

import httpx

binary, port, work = sys.argv[1], sys.argv[2], sys.argv[3]
url = f"http://127.0.0.1:{port}"
db = f"{work}/restart.db"


def start():
    proc = subprocess.Popen([binary, f"127.0.0.1:{port}", db],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            if httpx.get(f"{url}/ok").status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not start")


first = start()
c = httpx.Client(base_url=url, timeout=30)
tid = c.post("/threads", json={}).json()["thread_id"]
run = c.post(f"/threads/{tid}/runs", json={"assistant_id": "slow", "input": {"messages": ["dur"]}}).json()
for _ in range(100):  # until the run has started (its node sleeps 300 ms)
    if c.get(f"/threads/{tid}/runs/{run['run_id']}").json()["status"] == "running":
        break
    time.sleep(0.02)
first.kill()
first.wait()
second = start()
try:
    out = c.get(f"/threads/{tid}/runs/{run['run_id']}/join").json()
    assert out == {"messages": ["dur", "slow: dur"], "count": 1}, out
    status = c.get(f"/threads/{tid}/runs/{run['run_id']}").json()["status"]
    assert status == "success", status
    steps = [h["metadata"]["step"] for h in c.post(f"/threads/{tid}/history", json={"limit": 10}).json()]
    assert steps == [1, 0, -1], steps
    print("restart: a run cut short by SIGKILL finished after the restart")
finally:
    second.kill()
    second.wait()
