"""The distributed solver: ages cut by *material*, one long-lived worker per machine.

A board's material is the multiset of its tiles >= T (``T = 2**low``, ``low >= 3``).  Symmetries and spawns (2s and
4s) leave it unchanged, and a move changes it only by making a tile >= T.  Each material key (a *column*) is owned
by one worker, so:

* every spawn stays with its owner: an afterstate's children at ages a + 2 and a + 4 are the owner's states;
* only the moves that make a tile >= T reach another worker's afterstates (*crossing* moves).

To even out each age's work, the driver may move a key to another worker at any age (``--rebalance``): its
afterstates of that age then cross to the new owner, and its states of the next age, which the old owner spawned
before the move, are handed over (their values come back in the backward pass).

A column larger than one worker's share of an age cannot be balanced whole: the driver splits it across every
worker (``--split``, default above 1.05 even shares), each part the column's boards of one value of a hash of the
board.  Each part is a key of its own from then on; an afterstate's children may then fall in another part, and
the spawning worker hands them to that part's owner as it hands over a moved key's states.

Forward, age a: each worker expands its states with the local kernels, keeps the afterstates it owns and sends the
crossing ones (their IDs) to their owners; then each spawns its afterstates.  Backward, age a: each worker values
its afterstates from its own states of ages a + 2 and a + 4, sends the values of the crossing afterstates it
received back to the workers that sent them (values only: both sides kept the IDs), and values its states.  The
kernels are the local build's, unchanged, so the tables are bit-identical to a local build's.

Modules: :mod:`.material` (keys and their owners), :mod:`.column` (one worker's layers and steps),
:mod:`.lookups` (values across layers and pieces), :mod:`.driver` (the age loop over the workers),
:mod:`.ray_actors` (the workers as Ray actors, one per machine) and :mod:`.session` (the Ray cluster and its
machines).  ``python -m solver build --backend ray`` runs it.
"""
