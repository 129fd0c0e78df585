# A node of the NATS cluster (JetStream) on the backbone, where the three relays reach it.
# The lab gives every command the addresses of every host (NEARBY_LAB_ADDR_<host>).
exec nats-server --jetstream --store_dir "$NEARBY_STATE_DIR/jetstream" --server_name n2 --addr "$NEARBY_LAB_ADDR_n2" --port 4222 --cluster_name nearby --cluster "nats://$NEARBY_LAB_ADDR_n2:6222" --routes "nats://$NEARBY_LAB_ADDR_n1:6222,nats://$NEARBY_LAB_ADDR_n3:6222"
