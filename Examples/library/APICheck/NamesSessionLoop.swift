// Must not compile: the session's event loop (a transport type) stays inside the library.
// expect: 'loop' is inaccessible due to 'internal' protection level
import Nearby

func loop(of session: NearbySession) { _ = session.loop }
