/// SplitMix64's step: a fixed bijection of 64-bit states, so message ids made
/// from a sample's values are reproducible (compiled and declared codecs share it).
enum SplitMix64 {
    static func step(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
