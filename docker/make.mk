# Deployment targets (included by the Makefile). docs/DEPLOY.md explains them.
.PHONY: stack stack-down stack-status docker-validate

# The full local stack (Postgres, Redis, milvus-lite server, Ray Serve MemListener, Celery worker,
# Django) on 127.0.0.1, then the demo against it. The stack keeps running: `make stack-down` stops it.
stack: venv model
	scripts/stack.sh up
	scripts/stack.sh demo

stack-down:
	scripts/stack.sh down

stack-status:
	scripts/stack.sh status

# Compose file, Dockerfiles and the KubeRay manifest checked without a Docker engine
# (needs Debian's docker-compose: apt-get install -y --no-install-recommends docker-compose).
docker-validate: venv
	$(VENV)/bin/pytest tests/deploy -m "not integration" -q
