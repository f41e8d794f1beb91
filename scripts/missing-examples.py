#!/usr/bin/env python3
"""Lists the public items of a crate whose docs have no code example.

    CARGO_TARGET_DIR=target/nightly-doc cargo +nightly rustdoc -p fibra --lib \\
        -- -Z unstable-options --output-format json
    python3 scripts/missing-examples.py target/nightly-doc/doc/fibra.json

Walks the public API from the crate root (modules, re-exports, inherent
impls, trait items) and prints `path kind file:line` for every function,
method, type, trait, macro and constant reachable from it whose docs hold no
fenced code block. Items of trait impls are left out (the trait's docs
cover them), and so are struct fields and enum variants. Exits 1 if any
is missing, so CI could run it.
"""
import json
import sys

KINDS = {"function", "struct", "enum", "trait", "macro", "type_alias", "constant",
         "static", "union", "proc_macro"}


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    root = index[str(doc["root"])]
    seen = set()
    missing = []

    def item(id_):
        return index.get(str(id_))

    def walk(it, prefix):
        if it is None or it["id"] in seen:
            return
        seen.add(it["id"])
        if it.get("crate_id", 0) != 0:
            return
        inner = it["inner"]
        kind = next(iter(inner))
        body = inner[kind]
        name = it.get("name") or ""
        here = f"{prefix}::{name}" if name else prefix
        if kind == "module":
            for child in body["items"]:
                c = item(child)
                if c is not None and c["visibility"] == "public":
                    walk(c, here)
            return
        if kind == "use":
            target = body.get("id")
            if target is not None and item(target) is not None:
                walk(item(target), prefix)
            return
        if kind in KINDS:
            check(it, here, kind)
        if kind in ("struct", "enum", "union"):
            for impl_id in body.get("impls", []):
                impl = item(impl_id)
                if impl is None:
                    continue
                ib = impl["inner"]["impl"]
                if ib.get("trait") is not None or ib.get("is_synthetic") or ib.get("blanket_impl"):
                    continue
                for m in ib["items"]:
                    mi = item(m)
                    if mi is not None and mi["visibility"] == "public":
                        walk(mi, here)
        if kind == "trait":
            for m in body["items"]:
                walk(item(m), here)

    def check(it, path, kind):
        docs = it.get("docs") or ""
        if "```" not in docs:
            span = it.get("span") or {}
            where = f'{span.get("filename", "?")}:{(span.get("begin") or [0])[0]}'
            missing.append((path, kind, where))

    walk(root, "")
    for path, kind, where in sorted(missing, key=lambda m: m[2]):
        print(f"{path.lstrip(':')}\t{kind}\t{where}")
    print(f"{len(missing)} public items without an example", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
