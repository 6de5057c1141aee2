"""Launching a run: the CLI (``cli``, what ``ppstream train`` runs), the msrun command and process tree
(``msrun``) and the per-rank entry (``worker``)."""
