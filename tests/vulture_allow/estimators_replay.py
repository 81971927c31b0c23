"""Names in estimators/ and replay/ that nothing in the package calls by name, and why they stay (vulture reads
this module as a use of each)."""
# ruff: noqa: B018  (each bare name below is the use vulture counts)

from ackreplay.estimators.bandwidth.abse import ABSE
from ackreplay.estimators.bandwidth.bbr import BbrBw
from ackreplay.estimators.bandwidth.be import BE
from ackreplay.estimators.bandwidth.crb import CRB
from ackreplay.estimators.bandwidth.newbr import NewBR
from ackreplay.estimators.bandwidth.newreno import NewReno
from ackreplay.estimators.bandwidth.rate import RE
from ackreplay.estimators.bandwidth.tibet import Tibet, TibetTx
from ackreplay.estimators.bandwidth.westwood_plus import WestwoodPlus
from ackreplay.estimators.controls.cubic import Cubic
from ackreplay.estimators.controls.hstcp import HighSpeed
from ackreplay.estimators.controls.htcp import Htcp
from ackreplay.estimators.controls.stcp import Scalable
from ackreplay.estimators.inputs import FlowInputs

# The built-in estimators: ``@register`` puts each class in the registry when its module is imported, and
# replay, the CLI (``-e be``) and the API reach it by its registry name (``registry.create``), never by the
# class's own name.
ABSE  # registered as "abse"
BbrBw  # registered as "bbr_bw"
BE  # registered as "be"
CRB  # registered as "crb"
NewBR  # registered as "newbr"
NewReno  # registered as "newreno"
RE  # registered as "re"
Tibet  # registered as "tibet"
TibetTx  # registered as "tibet_tx"
WestwoodPlus  # registered as "westwood_plus"
Cubic  # registered as "cubic"
HighSpeed  # registered as "hstcp"
Htcp  # registered as "htcp"
Scalable  # registered as "stcp"

# FlowInputs is the plugin API's input (docs/plugins.md): a plugin's author, the tests and bench/replay.py build
# one outside replay from one flow's ACK and segment tables (from_frames) or from bare arrays (from_arrays).
FlowInputs.from_frames
FlowInputs.from_arrays
