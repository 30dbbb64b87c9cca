"""LangGraph's Python SqliteStore against a store database written by graph-sqlite.

    store_python_reads_rust.py specs SPECS.json
        Writes the searches both sides run (store_common.SEARCHES_RUST).
    store_python_reads_rust.py read DB RUST_DUMP.json
        Sweeps the item graph-sqlite wrote already expired (LangGraph's sweep
        must delete exactly it), then reads every item and runs the searches,
        and checks that it got what graph-sqlite got (RUST_DUMP.json, from
        `store_interop dump`): same values and times, same results in the same
        order with the same scores. Then writes items of its own: a new one,
        an update of a Rust item, a delete of another.
    store_python_reads_rust.py check DB RUST_DUMP.json
        The same comparison after graph-sqlite read the database again.

Run by store_python_reads_rust.sh; exits non-zero on the first difference.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

from store_common import dump_item, open_store  # noqa: E402

# Chosen so that no page holds two results of equal score, before and after
# Python's writes (LangGraph leaves the order of ties to SQLite; HashEmbeddings
# of 64 dimensions has collisions, so short texts often tie).
SEARCHES_RUST = [
    {"namespace": ["docs"], "query": "red apples", "filter": {"kind": "fruit"}, "limit": 10, "offset": 0},
    {"namespace": ["docs", "en"], "query": "red wine", "filter": {"kind": "drink"}, "limit": 10, "offset": 0},
    {"namespace": ["docs"], "query": "fresh apples", "filter": None, "limit": 2, "offset": 1},
    {"namespace": ["docs"], "query": None, "filter": {"kind": "fruit"}, "limit": 10, "offset": 0},
]

CHECKS = 0


def check(cond: bool, what: str) -> None:
    global CHECKS
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def dump(store) -> dict:
    items = []
    for ns in store.list_namespaces(limit=1000):
        for item in store.search(ns, limit=10_000):
            if tuple(item.namespace) == ns:
                items.append(dump_item(item))
    searches = []
    for spec in SEARCHES_RUST:
        found = store.search(
            tuple(spec["namespace"]),
            query=spec["query"],
            filter=spec["filter"],
            limit=spec["limit"],
            offset=spec["offset"],
        )
        searches.append({"search": spec, "found": [dump_item(i) for i in found]})
    return {
        "items": items,
        "searches": searches,
        "namespaces": [list(ns) for ns in store.list_namespaces()],
    }


def same_item(a: dict, b: dict, what: str) -> None:
    check(a["namespace"] == b["namespace"] and a["key"] == b["key"], f"{what}: {a['key']} vs {b['key']}")
    check(a["value"] == b["value"], f"{what} {a['key']}: value {a['value']} vs {b['value']}")
    for t in ("created_at", "updated_at"):
        check(abs(a[t] - b[t]) < 1e-6, f"{what} {a['key']}: {t} {a[t]} vs {b[t]}")
    # Exact: the same vectors, the same sqlite-vec arithmetic.
    check(a.get("score") == b.get("score"), f"{what} {a['key']}: score {a.get('score')} vs {b.get('score')}")


def compare(python: dict, rust: dict) -> None:
    key = lambda i: (i["namespace"], i["key"])  # noqa: E731
    p_items, r_items = sorted(python["items"], key=key), sorted(rust["items"], key=key)
    check(
        [key(i) for i in p_items] == [key(i) for i in r_items],
        f"items: {[key(i) for i in p_items]} vs {[key(i) for i in r_items]}",
    )
    for a, b in zip(p_items, r_items):
        same_item(a, b, "item")
    for p, r in zip(python["searches"], rust["searches"], strict=True):
        spec = p["search"]
        check(p["search"] == r["search"], f"search specs differ: {spec} vs {r['search']}")
        pk, rk = [i["key"] for i in p["found"]], [i["key"] for i in r["found"]]
        check(pk == rk, f"search {spec}: Python found {pk}, Rust {rk}")
        for a, b in zip(p["found"], r["found"]):
            same_item(a, b, f"search {spec}")
    check(python["namespaces"] == rust["namespaces"], f"namespaces {python['namespaces']} vs {rust['namespaces']}")


def main() -> None:
    mode = sys.argv[1]
    if mode == "specs":
        with open(sys.argv[2], "w") as f:
            json.dump(SEARCHES_RUST, f)
        return
    db, rust_dump = sys.argv[2], sys.argv[3]
    with open(rust_dump) as f:
        rust = json.load(f)
    with open_store(db) as store:
        store.setup()
        if mode == "read":
            # Written by graph-sqlite with a TTL of 1 ms: LangGraph's sweep (a
            # text comparison with CURRENT_TIMESTAMP) finds it expired.
            check(store.get(("prefs", "bob"), "expired") is not None, "the expired item is not there")
            # CURRENT_TIMESTAMP has whole seconds: within the second the item
            # was written, "HH:MM:SS" sorts before "HH:MM:SS.ffffff", so the
            # sweep would not see it expired yet. Let that second pass.
            time.sleep(1.05)
            check(store.sweep_ttl() == 1, "LangGraph's sweep did not delete exactly the expired item")
            check(store.get(("prefs", "bob"), "session") is not None, "a ten-year TTL was swept")
        compare(dump(store), rust)
        if mode == "read":
            store.put(("docs", "en"), "cherry", {"text": "red cherries", "kind": "fruit"})
            time.sleep(1.05)
            store.put(("docs", "en"), "kiwi", {"text": "green kiwi and red apples", "kind": "fruit", "n": 2})
            store.delete(("docs", "en"), "port")
    print(f"store_python_reads_rust.py {mode}: {CHECKS} checks passed")


if __name__ == "__main__":
    main()
