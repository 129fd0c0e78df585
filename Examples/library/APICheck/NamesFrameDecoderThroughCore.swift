// Must not compile: the codec is `package` in NearbyCore, so importing that module (it is a
// product too) does not reach it either.
// expect: cannot find 'FrameDecoder' in scope
import NearbyCore

var decoder = FrameDecoder()
