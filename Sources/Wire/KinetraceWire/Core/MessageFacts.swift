/// What every engine needs to know of one message, whatever its protocol:
/// plain values, so engines that do not know the protocol's types can
/// summarise, time, score and replay it.
///
/// Engines make one per message, so it holds plain values only (no
/// strings when valid) and stays small to copy.
public struct MessageFacts: Hashable, Sendable {
    /// Which way this kind of message travels; nil when invalid.
    public var direction: Direction?
    /// Why the bytes are not a valid message; nil when they are.
    public var error: WireError?
    /// The sender's clock when it sent the message, ms since the epoch, if the protocol stamps it.
    public var senderTimeMs: UInt64?
    /// The sender stamp of the sample a reply answers, if the protocol echoes one.
    public var echoTimeMs: UInt64?
    /// The motion a sample carries, if any.
    public var motion: MotionReading?

    public init(direction: Direction, senderTimeMs: UInt64? = nil, echoTimeMs: UInt64? = nil, motion: MotionReading? = nil) {
        self.direction = direction
        self.senderTimeMs = senderTimeMs
        self.echoTimeMs = echoTimeMs
        self.motion = motion
    }

    /// Facts of bytes that are no valid message.
    public init(invalid error: WireError) {
        self.error = error
    }

    public var isValid: Bool { error == nil }
}

/// Three components, as CoreMotion reports a vector (x, y, z in the device frame).
public struct Vector3: Hashable, Sendable {
    public var x: Double
    public var y: Double
    public var z: Double
    public init(_ x: Double, _ y: Double, _ z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
    public static let zero = Vector3(0, 0, 0)
    public func dot(_ other: Vector3) -> Double { x * other.x + y * other.y + z * other.z }
    public var length: Double { dot(self).squareRoot() }
}

/// Device motion as a phone reports it and as protocols carry it. Each
/// protocol carries what it has; the rest is nil.
public struct MotionReading: Hashable, Sendable {
    /// User acceleration in g, gravity removed.
    public var userAcceleration: Vector3?
    /// Rotation rate in rad/s.
    public var rotationRate: Vector3?
    /// Gravity in g.
    public var gravity: Vector3?
    /// Attitude as roll, pitch and yaw in radians (x, y, z).
    public var attitude: Vector3?
    /// The protocol's own vector, named by the protocol (a sum of user
    /// acceleration and rotation rate, axis by axis, say); nil when it has none.
    public var own: Vector3?

    public init(userAcceleration: Vector3? = nil, rotationRate: Vector3? = nil, gravity: Vector3? = nil, attitude: Vector3? = nil,
                own: Vector3? = nil) {
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.gravity = gravity
        self.attitude = attitude
        self.own = own
    }
}
