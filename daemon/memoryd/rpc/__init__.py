"""The socket server and its methods: frames, dispatch, parameters, peers, the single instance."""
