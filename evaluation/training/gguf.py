"""GGUF <-> Hugging Face directories, for training the CPU default model and serving the result.

The embedded MemListener runs a GGUF file under llama.cpp; the trainers need a Hugging Face
directory. Both directions use maintained code:

- ``to-hf``: transformers reads GGUF files of the Qwen2/Llama families (``gguf_file=``, needs the
  ``gguf`` package) and dequantises them to float32; ``save_pretrained`` writes the directory.
- ``to-gguf``: llama.cpp's own converter (``convert_hf_to_gguf.py`` with its ``gguf-py``), taken
  from the source distribution of the **same** ``llama-cpp-python`` version that is installed, so
  the file matches the runtime that loads it. The source archive comes from the package registry
  (``pip download``) once and is unpacked under ``--cache`` (default ``var/cache/llama-cpp-src``).
  ``--outtype`` is one the converter writes directly (``q8_0``, ``f16``, ``bf16``, ``f32``).
  The run's model card (``memlistener_model.json``) is copied beside the file as ``<file>.json``
  with the file's SHA-256: the llama.cpp engine then records the trained model id and version.

    python -m evaluation.training.gguf to-hf var/models/memlistener.gguf var/models/hf/qwen2.5-coder-0.5b
    python -m evaluation.training.gguf to-gguf var/training/runs/sft-cpu/final var/models/trained.gguf
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = ROOT / "var" / "cache" / "llama-cpp-src"
OUTTYPES = ("q8_0", "f16", "bf16", "f32")


def gguf_to_hf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Dequantise a GGUF checkpoint into a float32 Hugging Face directory."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path).resolve()
    out = Path(out_dir)
    kwargs = {"gguf_file": gguf_path.name}
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, torch_dtype=torch.float32, **kwargs)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def converter(cache: str | Path = DEFAULT_CACHE) -> tuple[Path, Path]:
    """(convert_hf_to_gguf.py, gguf-py dir) of the installed llama-cpp-python version."""
    release = version("llama-cpp-python")
    root = Path(cache) / f"llama_cpp_python-{release}"
    script = root / "vendor" / "llama.cpp" / "convert_hf_to_gguf.py"
    gguf_py = root / "vendor" / "llama.cpp" / "gguf-py"
    if script.is_file() and gguf_py.is_dir() and (script.parent / "conversion").is_dir():
        return script, gguf_py
    download = Path(cache) / "download"
    download.mkdir(parents=True, exist_ok=True)
    archive = download / f"llama_cpp_python-{release}.tar.gz"
    if not archive.is_file():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "--dest", str(download), f"llama-cpp-python=={release}"],
            check=True,
        )  # fmt: skip
    wanted = (
        "vendor/llama.cpp/convert_hf_to_gguf.py",
        "vendor/llama.cpp/conversion/",
        "vendor/llama.cpp/gguf-py/",
    )
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.split("/", 1)[-1].startswith(wanted)]
        tar.extractall(Path(cache), members=members, filter="data")
    if not script.is_file():
        raise FileNotFoundError(f"{archive.name} has no convert_hf_to_gguf.py")
    return script, gguf_py


def hf_to_gguf(
    hf_dir: str | Path, out: str | Path, *, outtype: str = "q8_0", cache: str | Path = DEFAULT_CACHE
) -> Path:
    """Convert a Hugging Face directory to one GGUF file with llama.cpp's converter."""
    if outtype not in OUTTYPES:
        raise ValueError(f"outtype must be one of {OUTTYPES}, got {outtype!r}")
    script, gguf_py = converter(cache)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(gguf_py), os.environ.get("PYTHONPATH")])),
    }
    subprocess.run(
        [sys.executable, str(script), str(hf_dir), "--outfile", str(out), "--outtype", outtype],
        check=True,
        env=env,
    )
    write_card(Path(hf_dir), out, outtype)
    return out


def write_card(hf_dir: Path, out: Path, outtype: str) -> Path | None:
    """Copy the training run's model card beside the GGUF (``<file>.json``), so the llama.cpp
    engine records the trained ``model_id`` and ``version`` in the audit log
    (``serving.engines.llamacpp.registered_identity``). None when ``hf_dir`` has no card."""
    source = hf_dir / "memlistener_model.json"
    if not source.is_file():
        return None
    card = json.loads(source.read_text(encoding="utf-8"))
    digest = hashlib.sha256()
    with open(out, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    card["gguf"] = {"file": out.name, "outtype": outtype, "sha256": digest.hexdigest()}
    target = out.with_name(out.name + ".json")
    target.write_text(json.dumps(card, indent=2, sort_keys=True), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-hf", help="GGUF file -> Hugging Face directory (float32)")
    a.add_argument("gguf")
    a.add_argument("out_dir")
    b = sub.add_parser("to-gguf", help="Hugging Face directory -> GGUF file")
    b.add_argument("hf_dir")
    b.add_argument("out")
    b.add_argument("--outtype", default="q8_0", choices=OUTTYPES)
    b.add_argument("--cache", default=str(DEFAULT_CACHE))
    args = ap.parse_args(argv)
    if args.cmd == "to-hf":
        print(gguf_to_hf(args.gguf, args.out_dir))
    else:
        print(hf_to_gguf(args.hf_dir, args.out, outtype=args.outtype, cache=args.cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
