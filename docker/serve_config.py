"""Derive the Ray Serve config a deployment runs from one of ``serving/config/*.yaml``.

The shipped configs bind the Serve proxy to 127.0.0.1:8000, right for one machine. A container
must bind 0.0.0.0, and the local stack picks its own port; both also may merge extra application
args (the stack's stand-in engine for tests). Deriving the file here, at image build time and at
``scripts/stack.sh up``, means no second copy of a config exists to drift.

    python docker/serve_config.py SRC DST [--host H] [--port P] [--args-json JSON]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``, recursively for nested mappings."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict | None):
            out[key] = merge(out.get(key) or {}, value)
        else:
            out[key] = value
    return out


def derive(
    config: dict[str, Any], *, host: str, port: int | None = None, args: dict[str, Any] | None = None
) -> dict[str, Any]:
    if not config.get("applications"):
        raise ValueError("the Serve config deploys no application")
    http = {**(config.get("http_options") or {}), "host": host}
    if port is not None:
        http["port"] = port
    apps = [{**app, "args": merge(app.get("args") or {}, args or {})} for app in config["applications"]]
    return {**config, "http_options": http, "applications": apps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python docker/serve_config.py", description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--args-json", default="", help="JSON object merged into every application's args")
    opts = ap.parse_args(argv)
    try:
        config = yaml.safe_load(opts.src.read_text())
        extra = json.loads(opts.args_json) if opts.args_json else {}
        if not isinstance(extra, dict):
            raise ValueError("--args-json must be a JSON object")
        derived = derive(config, host=opts.host, port=opts.port, args=extra)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    opts.dst.parent.mkdir(parents=True, exist_ok=True)
    opts.dst.write_text(yaml.safe_dump(derived, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
