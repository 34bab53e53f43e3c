/// SplitMix64: a small, fast, portable generator. Identical sequences on
/// every platform for the same seed, which `SystemRandomNumberGenerator`
/// cannot promise.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
    package let seed: UInt64
    private var state: UInt64

    package init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1) with 53 random bits.
    package mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A standard normal deviate (Box–Muller; one draw of the pair is used so
    /// the sequence depends only on the number of calls).
    package mutating func normal(mean: Double = 0, sd: Double = 1) -> Double {
        let u1 = max(unit(), 0x1.0p-53)
        let u2 = unit()
        return mean + sd * (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// An independent generator for a sub-stream (one per controller), so
    /// adding a controller does not change the others' draws.
    package func derived(_ stream: UInt64) -> SeededGenerator {
        var mixer = SeededGenerator(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
        return SeededGenerator(seed: mixer.next())
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
