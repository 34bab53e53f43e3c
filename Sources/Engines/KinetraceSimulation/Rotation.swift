#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A rotation as a unit quaternion (w, x, y, z), Hamilton convention.
/// As an attitude it takes device-frame vectors to the reference frame,
/// like CoreMotion's `CMAttitude.quaternion`.
struct Rotation: Hashable, Sendable {
    var w: Double, x: Double, y: Double, z: Double

    static let identity = Rotation(w: 1, x: 0, y: 0, z: 0)

    init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w
        self.x = x
        self.y = y
        self.z = z
    }

    /// `angle` radians about a unit `axis`, counter-clockwise looking down the axis.
    init(axis: SIMD3<Double>, angle: Double) {
        let half = angle / 2, s = sin(half)
        self.init(w: cos(half), x: axis.x * s, y: axis.y * s, z: axis.z * s)
    }

    static func aboutX(_ angle: Double) -> Rotation { Rotation(axis: [1, 0, 0], angle: angle) }
    static func aboutY(_ angle: Double) -> Rotation { Rotation(axis: [0, 1, 0], angle: angle) }
    static func aboutZ(_ angle: Double) -> Rotation { Rotation(axis: [0, 0, 1], angle: angle) }

    /// `a` followed by `b` about `a`'s rotated axes (an intrinsic composition).
    static func * (a: Rotation, b: Rotation) -> Rotation {
        Rotation(w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
                 x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                 y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                 z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    var inverse: Rotation { Rotation(w: w, x: -x, y: -y, z: -z) }

    var normalized: Rotation {
        let n = (w * w + x * x + y * y + z * z).squareRoot()
        return Rotation(w: w / n, x: x / n, y: y / n, z: z / n)
    }

    /// `v` turned by this rotation (device frame to reference frame, for an attitude).
    func rotate(_ v: SIMD3<Double>) -> SIMD3<Double> {
        let u = SIMD3(x, y, z)
        let t = 2 * crossProduct(u, v)
        return v + w * t + crossProduct(u, t)
    }

    /// `v` turned back (reference frame to device frame, for an attitude).
    func unrotate(_ v: SIMD3<Double>) -> SIMD3<Double> { inverse.rotate(v) }
}

func crossProduct(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> SIMD3<Double> {
    SIMD3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
}
