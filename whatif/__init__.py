"""ackreplay.whatif — what each congestion control would have done *in control* on the path a capture shows
(issue #37): the path inferred for a flow (``ackreplay.path``) as a bottleneck of the simulation
(``ackreplay.sim``), one bulk sender per algorithm, the capture's own flow beside them, a self-check that
re-enacts the captured sender first, and each figure's range over the path's plausible values. Pure library
(no database, no web, no settings); docs/whatif.md describes it.

By job: ``algorithms`` (which names can be put in control), ``figures`` (the path's figures as the
simulation's link, with their plausible ranges, or why they cannot be), ``captured`` (the captured flow's own
figures and the algorithm its sender ran), ``cross`` (the flows sharing the bottleneck, as cross traffic),
``runs`` (the simulations, the self-check and the ranges), ``flows`` (a replayed capture's flow as the inputs).
"""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
