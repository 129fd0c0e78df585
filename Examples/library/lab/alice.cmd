# hello-nearby (the library example) on host alice: invites bob, one message each way.
# scripts/check-library builds it and sets HELLO_NEARBY to the executable.
"$HELLO_NEARBY" --name alice --invite bob --timeout 60
