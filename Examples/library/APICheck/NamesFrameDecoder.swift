// Must not compile: the frame codec is not part of `import Nearby`.
// expect: cannot find 'FrameDecoder' in scope
import Nearby

var decoder = FrameDecoder()
