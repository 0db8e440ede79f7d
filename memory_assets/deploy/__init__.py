"""The Dagster deployment beyond ``dagster dev``: the same code location served by a gRPC code
server, with Postgres storage, the daemon and a distributed executor.

``dagster.yaml`` is the Postgres variant of the repo's instance file; ``local.py`` starts
the whole deployment on one machine (``make deploy-local``: PostgreSQL, Redis, a Celery
worker, the code server, the daemon and the webserver); ``helm-values.yaml`` and
``Dockerfile`` are the Kubernetes variant (the ``dagster/dagster`` Helm chart), checked as
configuration by ``tests/test_deploy_config.py``.
"""
