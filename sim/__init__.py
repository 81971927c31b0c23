"""ackreplay.sim — closed-loop "what-if" re-enactment (issue #37): a packet-level discrete-event simulation of
bulk TCP senders through one bottleneck, each under a congestion control of its own. Pure library (no
database, no web, no settings); docs/whatif.md describes the model.

By job: ``layout`` (the indices of the compiled state arrays), ``streams`` (the event queue: per-flow FIFO
streams under an indexed binary heap), ``controls`` (the congestion controls' growth and decrease),
``htcp`` (H-TCP's growth and adaptive backoff), ``network`` (bottleneck link and receiver), ``sender`` (SACK
scoreboard, PRR recovery, RTO), ``borrow`` (the loop's unowned views of the state's arrays), ``engine`` (the
compiled event loop), ``acklog`` and ``external`` (an estimator's decision taken in Python on the ACKs logged so
far, the loop paused), ``model`` (the Python API: ``Link``, ``FlowSpec``, ``simulate``, ``controllable``). BBR,
which takes the whole control: ``bbr_layout`` (its state's columns), ``rate`` (Linux's delivery-rate sampler),
``minmax`` (the windowed max filter), ``bbr_window`` (BDP, budgets, pacing rate), ``bbr_cycle`` (modes and gain
cycle), ``bbr_policer`` (the long-term rate), ``bbr_model`` (the model's update at each ACK), ``bbr`` (its ACK
handler, cwnd and loss hooks).
"""

if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")

from pathlib import Path

from ackreplay.jitcache import guard

_ROOT = Path(__file__).parent.parent  # the ackreplay package (in the checkout, through its links)
guard(Path(__file__).parent, _ROOT / "estimators")  # numba loads cached code at first call: drop it if sources changed
