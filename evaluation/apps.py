"""The evaluation harness as a Django app: it exists so `manage.py evaluate` is found.

Installed by the local and test settings only (``personatree_site/settings/local.py``, ``test.py``);
production never installs or imports it (import-linter: ``memory``, ``workers`` and ``serving`` must
not import ``evaluation``).
"""

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation harness"
