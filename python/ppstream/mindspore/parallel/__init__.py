"""Who talks to whom: a rank's groups (``groups.Topology``) and the communication group of every call
(``commplan.CommPlan``)."""
