#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// CoreMotion's roll, pitch and yaw (radians) of an attitude quaternion (w, x, y, z) that
/// takes device-frame vectors to a reference frame with z up: the rotation is
/// Rz(yaw) · Rx(pitch) · Ry(roll), so pitch (about device x) lies in [−π/2, π/2] and roll
/// (about device y) and yaw (about z) in [−π, π]. A phone lying face up reads (0, 0, yaw);
/// upright in portrait, pitch reads +π/2. The simulator writes attitude streams with it and
/// the gesture engine reads device-motion samples with it, so both agree.
package enum AttitudeAngles {
    package static func rollPitchYaw(w: Double, x: Double, y: Double, z: Double) -> (roll: Double, pitch: Double, yaw: Double) {
        let n = (w * w + x * x + y * y + z * z).squareRoot()
        guard n > 0, n.isFinite else { return (0, 0, 0) }
        let (w, x, y, z) = (w / n, x / n, y / n, z / n)
        // Rotation-matrix entries R[row][column] of the quaternion.
        let r21 = 2 * (y * z + w * x)
        let r20 = 2 * (x * z - w * y), r22 = 1 - 2 * (x * x + y * y)
        let r01 = 2 * (x * y - w * z), r11 = 1 - 2 * (x * x + z * z)
        return (atan2(-r20, r22), asin(min(1, max(-1, r21))), atan2(-r01, r11))
    }

    /// Gravity in the device frame (g) for a roll and pitch: the reference frame's (0, 0, −1)
    /// seen from the device. Yaw does not change it.
    package static func gravity(roll: Double, pitch: Double) -> (x: Double, y: Double, z: Double) {
        (cos(pitch) * sin(roll), -sin(pitch), -cos(pitch) * cos(roll))
    }
}
