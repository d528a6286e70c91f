//! Integration tests of the client against the embedded API server.
