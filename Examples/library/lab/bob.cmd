# hello-nearby (the library example) on host bob: accepts alice's invitation.
"$HELLO_NEARBY" --name bob --accept alice --timeout 60
