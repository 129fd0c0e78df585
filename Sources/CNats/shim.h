// The NATS C client (Debian's libnats-dev 3.4): connections, JetStream and key-value.
#include <nats/nats.h>
