// Must not compile: the protocol's state machines are not part of `import Nearby`.
// expect: cannot find type 'SessionStateMachine' in scope
import Nearby

let machine: SessionStateMachine? = nil
