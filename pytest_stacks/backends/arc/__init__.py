"""ARC CE 7: the reference driver over A-REX's REST interface (``driver``, ``rest``), the
mapping of A-REX's states (``states``) and the compose adapter (``adapter``) of the stack
where A-REX fronts the container's own Slurm."""
