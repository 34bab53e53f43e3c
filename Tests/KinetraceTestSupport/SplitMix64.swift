import KinetraceSupport

/// The tests' seeded generator: the product's own, now that it lives in the
/// support layer (the same SplitMix64 sequence the tests' copy produced).
package typealias SplitMix64 = SeededGenerator
