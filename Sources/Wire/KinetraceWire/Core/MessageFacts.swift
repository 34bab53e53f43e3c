/// What every engine needs to know of one message, whatever its protocol:
/// plain values, so engines that do not know the protocol's types can
/// summarise, time, score and replay it.
///
/// Engines make one per message, so it holds plain values only (no
/// strings when valid) and stays small to copy.
package struct MessageFacts: Hashable, Sendable {
    /// Which way this kind of message travels; nil when invalid.
    package var direction: Direction?
    /// Why the bytes are not a valid message; nil when they are.
    package var error: WireError?
    /// The sender's clock when it sent the message, ms since the epoch, if the protocol stamps it.
    package var senderTimeMs: UInt64?
    /// The sender stamp of the sample a reply answers, if the protocol echoes one.
    package var echoTimeMs: UInt64?
    /// The motion a sample carries, if any.
    package var motion: MotionReading?

    package init(direction: Direction, senderTimeMs: UInt64? = nil, echoTimeMs: UInt64? = nil, motion: MotionReading? = nil) {
        self.direction = direction
        self.senderTimeMs = senderTimeMs
        self.echoTimeMs = echoTimeMs
        self.motion = motion
    }

    /// Facts of bytes that are no valid message.
    package init(invalid error: WireError) {
        self.error = error
    }

    package var isValid: Bool { error == nil }
}

/// Three components, as CoreMotion reports a vector (x, y, z in the device frame).
package struct Vector3: Hashable, Sendable {
    package var x: Double
    package var y: Double
    package var z: Double
    package init(_ x: Double, _ y: Double, _ z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
    package static let zero = Vector3(0, 0, 0)
    package func dot(_ other: Vector3) -> Double { x * other.x + y * other.y + z * other.z }
    package var length: Double { dot(self).squareRoot() }
}

/// Device motion as a phone reports it and as protocols carry it. Each
/// protocol carries what it has; the rest is nil.
package struct MotionReading: Hashable, Sendable {
    /// User acceleration in g, gravity removed.
    package var userAcceleration: Vector3?
    /// Rotation rate in rad/s.
    package var rotationRate: Vector3?
    /// Gravity in g.
    package var gravity: Vector3?
    /// Attitude as roll, pitch and yaw in radians (x, y, z).
    package var attitude: Vector3?
    /// The protocol's own vector, named by the protocol (a sum of user
    /// acceleration and rotation rate, axis by axis, say); nil when it has none.
    package var own: Vector3?

    package init(userAcceleration: Vector3? = nil, rotationRate: Vector3? = nil, gravity: Vector3? = nil, attitude: Vector3? = nil,
                own: Vector3? = nil) {
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.gravity = gravity
        self.attitude = attitude
        self.own = own
    }
}
