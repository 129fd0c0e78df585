#ifndef NEARBY_CSODIUM_SHIM_H
#define NEARBY_CSODIUM_SHIM_H
// libsodium (Debian's libsodium-dev, 1.0.18): every cryptographic primitive Nearby uses.
#include <sodium.h>
#endif
