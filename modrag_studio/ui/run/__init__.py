"""Running from the studio: actions, run bar, controller and worker, live states, guards."""
