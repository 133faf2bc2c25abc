"""Chat rooms: KillrChat's model and lightweight-transaction rules, bucketed history, live delivery."""
