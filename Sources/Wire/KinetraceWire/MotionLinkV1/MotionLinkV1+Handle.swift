extension WireProtocolHandle {
    /// MotionLink v1 (specs/motionlink-v1.md).
    public static var motionLinkV1: WireProtocolHandle { WireProtocolHandle(MotionLinkV1()) }
}
