"""ackreplay.workers — Celery tasks: ids in, one ``core`` service call each."""
