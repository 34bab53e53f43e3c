import KinetraceController
import KinetraceTrace
import KinetraceWire
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CoreMotion's roll, pitch and yaw from the synthesizer's quaternions.
@Suite struct AttitudeAnglesTests {
    /// The quaternion of a turn by `angle` about a unit axis.
    func turn(_ angle: Double, _ axis: (Double, Double, Double)) -> MotionSampleRecord.Attitude {
        MotionSampleRecord.Attitude(w: cos(angle / 2), x: axis.0 * sin(angle / 2), y: axis.1 * sin(angle / 2), z: axis.2 * sin(angle / 2))
    }

    @Test func eachAngleComesFromItsOwnAxis() {
        let a = 0.4
        // Pitch is about the device's x axis, roll about y, yaw about z (CMAttitude).
        let pitch = turn(a, (1, 0, 0)).coreMotionAngles
        #expect(abs(pitch.y - a) < 1e-12 && abs(pitch.x) < 1e-12 && abs(pitch.z) < 1e-12)
        let roll = turn(a, (0, 1, 0)).coreMotionAngles
        #expect(abs(roll.x - a) < 1e-12 && abs(roll.y) < 1e-12 && abs(roll.z) < 1e-12)
        let yaw = turn(-a, (0, 0, 1)).coreMotionAngles
        #expect(abs(yaw.z + a) < 1e-12 && abs(yaw.x) < 1e-12 && abs(yaw.y) < 1e-12)
    }

    @Test func aPhoneHeldUprightInPortraitPitchesUp() {
        // Stood up from flat by 70° about x (leaning back 20°): CoreMotion reads pitch 70°, roll and yaw 0.
        let angles = turn(70 * Double.pi / 180, (1, 0, 0)).coreMotionAngles
        #expect(abs(angles.y - 70 * Double.pi / 180) < 1e-12)
    }

    @Test func theComposedOrderIsYawThenPitchThenRoll() {
        // q = qz(yaw) · qx(pitch) · qy(roll) must come back as (roll, pitch, yaw).
        func product(_ p: MotionSampleRecord.Attitude, _ q: MotionSampleRecord.Attitude) -> MotionSampleRecord.Attitude {
            MotionSampleRecord.Attitude(w: p.w * q.w - p.x * q.x - p.y * q.y - p.z * q.z,
                                        x: p.w * q.x + p.x * q.w + p.y * q.z - p.z * q.y,
                                        y: p.w * q.y - p.x * q.z + p.y * q.w + p.z * q.x,
                                        z: p.w * q.z + p.x * q.y - p.y * q.x + p.z * q.w)
        }
        let (roll, pitch, yaw) = (-0.7, 0.3, 2.1)
        let q = product(product(turn(yaw, (0, 0, 1)), turn(pitch, (1, 0, 0))), turn(roll, (0, 1, 0)))
        let angles = q.coreMotionAngles
        #expect(abs(angles.x - roll) < 1e-12 && abs(angles.y - pitch) < 1e-12 && abs(angles.z - yaw) < 1e-12)
    }

    @Test func extremesStayWithinTheFloat32RangesAHostChecks() throws {
        // A half turn about y (roll ±π) and a quarter turn about x (pitch π/2) round past float32's π.
        for q in [turn(Double.pi, (0, 1, 0)), turn(Double.pi / 2, (1, 0, 0)), turn(-Double.pi, (0, 0, 1))] {
            let bytes = try #require(AttitudeStream.sample(MotionReading(attitude: q.coreMotionAngles), timeMs: 0))
            #expect(AttitudeStream.facts(bytes).isValid)
        }
    }
}
