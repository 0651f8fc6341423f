"""usersim-behavior: the simulator enacts one of 13 frictional behaviours (or is an ordinary
customer on control rows) against a frozen ABCD support agent; a judge scores the generated span."""
