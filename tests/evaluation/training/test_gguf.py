"""GGUF conversion plumbing (evaluation.training.gguf) without the network or a real model.

The converter comes from the llama-cpp-python source archive of the installed version; here a
hand-built archive of that name stands in for the one ``pip download`` fetches (a real
conversion of a trained Qwen checkpoint is recorded in docs/results/training_cpu_sft/).
"""

from __future__ import annotations

import io
import json
import tarfile
from importlib.metadata import version

import pytest

from evaluation.training.gguf import converter, hf_to_gguf

FAKE_CONVERTER = """
import json, os, sys
out = sys.argv[sys.argv.index("--outfile") + 1]
with open(out, "w") as fh:
    json.dump({"argv": sys.argv[1:], "pythonpath": os.environ.get("PYTHONPATH", "")}, fh)
"""


def _archive(cache, members: dict[str, str]):
    release = version("llama-cpp-python")
    download = cache / "download"
    download.mkdir(parents=True)
    with tarfile.open(download / f"llama_cpp_python-{release}.tar.gz", "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-{release}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return cache / f"llama_cpp_python-{release}" / "vendor" / "llama.cpp"


def test_only_the_converter_is_unpacked_and_it_runs_with_its_own_gguf_py(tmp_path):
    cache = tmp_path / "cache"
    llama = _archive(
        cache,
        {
            "vendor/llama.cpp/convert_hf_to_gguf.py": FAKE_CONVERTER,
            "vendor/llama.cpp/conversion/__init__.py": "",
            "vendor/llama.cpp/gguf-py/gguf/__init__.py": "",
            "vendor/llama.cpp/src/llama.cpp": "// not needed",
            "llama_cpp/__init__.py": "",
        },
    )
    script, gguf_py = converter(cache)
    assert script == llama / "convert_hf_to_gguf.py" and gguf_py == llama / "gguf-py"
    assert (llama / "conversion" / "__init__.py").is_file()
    assert not (llama / "src").exists() and not (llama.parent.parent / "llama_cpp").exists()

    out = hf_to_gguf(tmp_path / "hf", tmp_path / "models" / "m.gguf", outtype="f16", cache=cache)
    seen = json.loads(out.read_text())
    assert seen["argv"] == [str(tmp_path / "hf"), "--outfile", str(out), "--outtype", "f16"]
    assert seen["pythonpath"].split(":")[0] == str(gguf_py)


def test_an_archive_without_the_converter_is_an_error(tmp_path):
    _archive(tmp_path, {"vendor/llama.cpp/README.md": "no converter here"})
    with pytest.raises(FileNotFoundError, match="convert_hf_to_gguf.py"):
        converter(tmp_path)


def test_outtypes_the_converter_cannot_write_are_refused(tmp_path):
    with pytest.raises(ValueError, match="outtype"):
        hf_to_gguf(tmp_path, tmp_path / "m.gguf", outtype="q4_k_m", cache=tmp_path)


def test_the_run_card_goes_beside_the_gguf_and_names_the_model_in_the_audit_log(tmp_path):
    from serving.engines.llamacpp import registered_identity

    cache = tmp_path / "cache"
    _archive(
        cache,
        {
            "vendor/llama.cpp/convert_hf_to_gguf.py": FAKE_CONVERTER,
            "vendor/llama.cpp/conversion/__init__.py": "",
            "vendor/llama.cpp/gguf-py/gguf/__init__.py": "",
        },
    )
    hf = tmp_path / "final"
    hf.mkdir()
    (hf / "memlistener_model.json").write_text(json.dumps({"model_id": "memlistener-sft", "version": "3"}))
    out = hf_to_gguf(hf, tmp_path / "m.gguf", cache=cache)
    card = json.loads((tmp_path / "m.gguf.json").read_text())
    assert card["model_id"] == "memlistener-sft" and card["gguf"]["file"] == "m.gguf"
    assert len(card["gguf"]["sha256"]) == 64
    assert registered_identity(out) == ("memlistener-sft", "3", None)


def test_files_without_a_card_keep_their_name_and_a_broken_card_is_an_error(tmp_path):
    from serving.engines.base import EngineError
    from serving.engines.llamacpp import registered_identity

    plain = tmp_path / "plain.gguf"
    plain.write_bytes(b"GGUF")
    assert registered_identity(plain) == (None, "", None)
    (tmp_path / "plain.gguf.json").write_text("{not json")
    with pytest.raises(EngineError, match="model card"):
        registered_identity(plain)
