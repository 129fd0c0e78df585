#ifndef NEARBY_CDNSSD_SHIM_H
#define NEARBY_CDNSSD_SHIM_H
// Avahi's compatibility layer installs <dns_sd.h> (also under avahi-compat-libdns_sd/);
// macOS ships the same header natively.
#include <dns_sd.h>
#endif
