"""The publications the estimators and controls implement, cited in full once (the catalogue's ``citation``), and
where each is documented (the catalogue's ``doc``: a section of the repository's ``docs/``)."""

from __future__ import annotations

#: Wang et al.: BE, RE, CRB and ABSE, the Westwood loss reaction.
WANG_2002 = ("R. Wang, M. Valla, M. Y. Sanadidi, B. K. F. Ng, M. Gerla, \"Using Adaptive Rate Estimation to Provide "
             "Enhanced and Robust Transport over Heterogeneous Networks\", Proc. 10th IEEE International Conference "
             "on Network Protocols (ICNP 2002), 2002")
#: The original TCP Westwood (BE's Tustin filter with paired samples).
MASCOLO_2001 = ("S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang, \"TCP Westwood: Bandwidth Estimation for "
                "Enhanced Transport over Wireless Links\", Proc. ACM MobiCom 2001, Rome, 2001")
#: TIBET.
CAPONE_2001 = ("A. Capone, F. Martignon, \"Bandwidth Estimates in the TCP Congestion Control Scheme\" (TIBET: Time "
               "Intervals based Bandwidth Estimation Technique), Tyrrhenian International Workshop on Digital "
               "Communications (IWDC 2001), LNCS 2170, Springer, 2001")
#: Westwood+ against NewReno; the floor-half fix.
MOLLER_2007 = ("N. Möller, C. Barakat, K. Avrachenkov, E. Altman, \"Inter-protocol fairness between TCP New Reno and "
               "TCP Westwood+\", Proc. 3rd EuroNGI Conference on Next Generation Internet Networks (NGI 2007), "
               "Trondheim, 2007")
#: Westwood+'s estimator.
GRIECO_2004 = ("L. A. Grieco, S. Mascolo, \"Performance Evaluation and Comparison of Westwood+, New Reno, and Vegas "
               "TCP Congestion Control\", ACM SIGCOMM Computer Communication Review 34(2), 2004")
#: NewBR.
WU_2014 = ("R.-Q. Wu, H. Jie, N. Ding, \"An Improved TCP Congestion Control Algorithm of Based on Bandwidth Estimation "
           "in Heterogeneous Networks\", Journal of Communications 9(10), pp. 792–797, 2014")
#: The buffer study: the decision-only controls' comparison (their decrease factors, its Table I).
BUFFER_STUDY = ("S. Mascolo, F. Vacirca, \"Issues in Performance Evaluation of New TCP Stacks in High Speed "
                "Networks\", Fourth International Workshop on Protocols for Fast Long-Distance Networks (PFLDnet "
                "2006), Nara, Japan, 2006")


def doc(page: str, anchor: str) -> str:
    """Where a registry entry is documented: ``docs/<page>.md#<anchor>``."""
    return f"docs/{page}.md#{anchor}"
