"""vulture allow-list: the package root's names that Python reaches by protocol, not by a call in the code."""
# ruff: noqa: B018  (each bare name below is the use vulture counts)

import ackreplay

ackreplay.__getattr__  # PEP 562: `from ackreplay import Estimator` resolves the plugin API lazily through it
