import pytest

from evaluation.endpoints import EndpointError, memlistener_config, parse_spec, responder_settings
from memory import conf
from serving.client import ClientConfig


def test_parse_spec():
    assert parse_spec(None) == ("local", "")  # the responder's default
    assert parse_spec("openai:http://h:1/v1#m") == ("openai", "http://h:1/v1#m")
    with pytest.raises(EndpointError, match="unknown endpoint"):
        parse_spec("grpc:x")
    with pytest.raises(EndpointError, match="needs a value"):
        parse_spec("recorded:")


def test_configs(settings):
    assert memlistener_config("local:/m.gguf").engine.model_path == "/m.gguf"
    default = memlistener_config(None)  # the product's configured listener, whatever it is
    assert default == conf.listener_client_config(ClientConfig)
    assert memlistener_config("ray:http://127.0.0.1:8000/x").url == "http://127.0.0.1:8000/x"
    c = memlistener_config("openai:http://h/v1#qwen")
    assert (c.backend, c.engine.base_url, c.engine.model) == ("openai", "http://h/v1", "qwen")
    assert memlistener_config("standin:derived").engine.standin_mode == "derived"
    assert responder_settings("recorded:/r.jsonl", max_tokens=9) == {
        "RESPONDER_BACKEND": "recorded",
        "RESPONDER_MAX_TOKENS": 9,
        "RESPONDER_RECORDING_PATH": "/r.jsonl",
    }
    assert responder_settings("openai:http://h/v1#m")["OPENAI_MODEL"] == "m"
    with pytest.raises(EndpointError, match="MemListener only"):
        responder_settings("ray:http://x")
