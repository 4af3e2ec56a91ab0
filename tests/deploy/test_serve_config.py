"""docker/serve_config.py: the one way a deployment derives its Serve config from serving/config."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml

from serving.config import AppConfig
from tests.deploy.conftest import DOCKER_DIR, ROOT

_spec = importlib.util.spec_from_file_location("serve_config", DOCKER_DIR / "serve_config.py")
serve_config = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_config)

CPU = ROOT / "serving" / "config" / "cpu.yaml"


def test_container_config_binds_all_interfaces_and_keeps_everything_else():
    source = yaml.safe_load(CPU.read_text())
    derived = serve_config.derive(source, host="0.0.0.0")
    assert derived["http_options"] == {**source["http_options"], "host": "0.0.0.0"}
    assert derived["applications"] == source["applications"]
    assert derived["proxy_location"] == source["proxy_location"]


def test_stack_config_gets_its_port_and_merged_engine_args():
    source = yaml.safe_load(CPU.read_text())
    derived = serve_config.derive(source, host="127.0.0.1", port=18123, args={"engine": {"kind": "standin"}})
    assert derived["http_options"]["port"] == 18123
    engine = derived["applications"][0]["args"]["engine"]
    assert engine["kind"] == "standin"
    assert (
        engine["model_path"] == source["applications"][0]["args"]["engine"]["model_path"]
    )  # merged, not replaced
    AppConfig.model_validate(derived["applications"][0]["args"])
    assert source["applications"][0]["args"]["engine"]["kind"] == "llamacpp"  # the source is not mutated


def test_a_config_without_applications_is_refused():
    with pytest.raises(ValueError, match="no application"):
        serve_config.derive({"http_options": {}}, host="0.0.0.0")


def test_cli_writes_the_file_and_reports_bad_input(tmp_path, capsys):
    dst = tmp_path / "out" / "serve.yaml"
    args = json.dumps({"max_batch_size": 2})
    assert serve_config.main([str(CPU), str(dst), "--host", "0.0.0.0", "--args-json", args]) == 0
    written = yaml.safe_load(dst.read_text())
    assert written["http_options"]["host"] == "0.0.0.0"
    assert written["applications"][0]["args"]["max_batch_size"] == 2
    assert serve_config.main([str(CPU), str(dst), "--args-json", "[1]"]) == 1
    assert "must be a JSON object" in capsys.readouterr().err
    assert serve_config.main([str(tmp_path / "missing.yaml"), str(dst)]) == 1
