//! Helpers shared by the facade's integration tests.
#![allow(dead_code)]

pub mod examples;
